package seed

import (
	"fmt"
	"strings"
)

// writeYAMLEntry writes one `key: "value"` line of a top-level YAML mapping.
func writeYAMLEntry(b *strings.Builder, key, value string) {
	if plainKey(key) {
		b.WriteString(key)
	} else {
		b.WriteString(yamlQuote(key))
	}
	b.WriteString(": ")
	b.WriteString(yamlQuote(value))
	b.WriteByte('\n')
}

// yaml11Words are the plain scalars that a YAML 1.1 parser (cloud-init uses PyYAML) resolves to a bool or
// to null rather than to a string, compared in lower case; y and n are bools in the 1.1 specification even
// though PyYAML does not treat them so.
var yaml11Words = map[string]bool{
	"y": true, "n": true, "yes": true, "no": true, "on": true, "off": true,
	"true": true, "false": true, "null": true,
}

// plainKey reports whether key can be written unquoted and still be read back as the same string: only
// [A-Za-z0-9_.-], starting with a letter or '_' (a leading digit, sign or dot could read as a number, .inf
// or .nan), and not a word YAML 1.1 reads as a bool or null.
func plainKey(key string) bool {
	if key == "" || yaml11Words[strings.ToLower(key)] {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_':
		case (c >= '0' && c <= '9') || c == '.' || c == '-':
			if i == 0 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// yamlQuote returns s as a YAML double-quoted scalar that reads back as exactly s. Backslash and double
// quote are escaped, and so is every character YAML does not allow raw in a document or would fold as a
// line break: C0 and C1 controls, DEL, NEL, the Unicode line and paragraph separators, the byte order mark
// and the non-characters U+FFFE and U+FFFF. Bytes that are not valid UTF-8 become U+FFFD, since a YAML
// document is Unicode text and has no way to carry them.
func yamlQuote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		case 0:
			b.WriteString(`\0`)
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\v':
			b.WriteString(`\v`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		case 0x1b:
			b.WriteString(`\e`)
		case 0x85:
			b.WriteString(`\N`)
		case 0x2028:
			b.WriteString(`\L`)
		case 0x2029:
			b.WriteString(`\P`)
		default:
			switch {
			case r < 0x20 || (r >= 0x7f && r <= 0x9f):
				fmt.Fprintf(&b, `\x%02X`, r)
			case r == 0xfeff || r == 0xfffe || r == 0xffff:
				fmt.Fprintf(&b, `\u%04X`, r)
			default:
				// An invalid byte comes out of range as utf8.RuneError, so it is written as U+FFFD.
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
