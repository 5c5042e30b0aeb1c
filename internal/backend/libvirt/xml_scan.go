package libvirt

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// xmlScanner reads XML one token at a time over the document's text, without building anything
// it is not asked for: encoding/xml's decoder, even into a small struct, tokenises and allocates
// for every element of a domain's XML, and at 1,000 members that was most of a listing's CPU.
// It knows the XML libvirt writes: elements, attributes in either quote, character data with the
// five named entities and character references, CDATA, comments, processing instructions and a
// doctype (skipped). Anything else is an error, as it is for encoding/xml.
type xmlScanner struct {
	s string
	i int
}

type xmlTokKind int

const (
	tokStart xmlTokKind = iota
	tokEnd
	tokText // raw: entities not yet replaced (text), or CDATA (cdata true)
	tokEOF
)

type xmlAttr struct{ name, value string } // value raw, entities not replaced

type xmlTok struct {
	kind      xmlTokKind
	name      string // qualified name of a start or end tag
	attrs     []xmlAttr
	selfClose bool
	text      string
	cdata     bool
}

var errXMLSyntax = errors.New("XML syntax error")

func (x *xmlScanner) fail(what string) error {
	return fmt.Errorf("%w at offset %d: %s", errXMLSyntax, x.i, what)
}

// next returns the next token; attrs of a start tag are only valid until the next call.
func (x *xmlScanner) next(t *xmlTok) error {
	t.attrs, t.selfClose, t.cdata, t.text, t.name = t.attrs[:0], false, false, "", ""
	if x.i >= len(x.s) {
		t.kind = tokEOF
		return nil
	}
	if x.s[x.i] != '<' {
		end := strings.IndexByte(x.s[x.i:], '<')
		if end < 0 {
			end = len(x.s) - x.i
		}
		t.kind, t.text = tokText, x.s[x.i:x.i+end]
		x.i += end
		return nil
	}
	rest := x.s[x.i:]
	switch {
	case strings.HasPrefix(rest, "<!--"):
		end := strings.Index(rest[4:], "-->")
		if end < 0 {
			return x.fail("unterminated comment")
		}
		x.i += 4 + end + 3
		return x.next(t)
	case strings.HasPrefix(rest, "<![CDATA["):
		end := strings.Index(rest[9:], "]]>")
		if end < 0 {
			return x.fail("unterminated CDATA")
		}
		t.kind, t.text, t.cdata = tokText, rest[9:9+end], true
		x.i += 9 + end + 3
		return nil
	case strings.HasPrefix(rest, "<?"):
		end := strings.Index(rest[2:], "?>")
		if end < 0 {
			return x.fail("unterminated processing instruction")
		}
		x.i += 2 + end + 2
		return x.next(t)
	case strings.HasPrefix(rest, "<!"):
		end := strings.IndexByte(rest, '>')
		if end < 0 || strings.Contains(rest[:end], "[") {
			return x.fail("unsupported declaration")
		}
		x.i += end + 1
		return x.next(t)
	case strings.HasPrefix(rest, "</"):
		x.i += 2
		name := x.name()
		if name == "" {
			return x.fail("end tag without a name")
		}
		x.space()
		if x.i >= len(x.s) || x.s[x.i] != '>' {
			return x.fail("unterminated end tag")
		}
		x.i++
		t.kind, t.name = tokEnd, name
		return nil
	}
	x.i++
	name := x.name()
	if name == "" {
		return x.fail("start tag without a name")
	}
	t.kind, t.name = tokStart, name
	for {
		x.space()
		if x.i >= len(x.s) {
			return x.fail("unterminated start tag")
		}
		switch x.s[x.i] {
		case '>':
			x.i++
			return nil
		case '/':
			if x.i+1 >= len(x.s) || x.s[x.i+1] != '>' {
				return x.fail("stray / in a start tag")
			}
			x.i += 2
			t.selfClose = true
			return nil
		}
		an := x.name()
		if an == "" {
			return x.fail("attribute without a name")
		}
		x.space()
		if x.i >= len(x.s) || x.s[x.i] != '=' {
			return x.fail("attribute without a value")
		}
		x.i++
		x.space()
		if x.i >= len(x.s) || (x.s[x.i] != '\'' && x.s[x.i] != '"') {
			return x.fail("unquoted attribute value")
		}
		q := x.s[x.i]
		end := strings.IndexByte(x.s[x.i+1:], q)
		if end < 0 {
			return x.fail("unterminated attribute value")
		}
		v := x.s[x.i+1 : x.i+1+end]
		if strings.IndexByte(v, '<') >= 0 {
			return x.fail("< in an attribute value")
		}
		t.attrs = append(t.attrs, xmlAttr{an, v})
		x.i += end + 2
	}
}

func (x *xmlScanner) space() bool {
	start := x.i
	for x.i < len(x.s) {
		switch x.s[x.i] {
		case ' ', '\t', '\n', '\r':
			x.i++
		default:
			return x.i > start
		}
	}
	return x.i > start
}

func (x *xmlScanner) name() string {
	start := x.i
	for x.i < len(x.s) {
		c := x.s[x.i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '>' || c == '/' || c == '=' || c == '<' || c == '"' || c == '\'' {
			break
		}
		x.i++
	}
	return x.s[start:x.i]
}

// unescape replaces entities and character references in raw text or an attribute value.
func unescape(raw string) (string, error) {
	if strings.IndexByte(raw, '&') < 0 {
		return normaliseNewlines(raw), nil
	}
	var b strings.Builder
	b.Grow(len(raw))
	for {
		amp := strings.IndexByte(raw, '&')
		if amp < 0 {
			b.WriteString(raw)
			return normaliseNewlines(b.String()), nil
		}
		b.WriteString(raw[:amp])
		raw = raw[amp:]
		semi := strings.IndexByte(raw, ';')
		if semi < 0 {
			return "", fmt.Errorf("%w: unterminated entity", errXMLSyntax)
		}
		ent := raw[1:semi]
		switch ent {
		case "lt":
			b.WriteByte('<')
		case "gt":
			b.WriteByte('>')
		case "amp":
			b.WriteByte('&')
		case "apos":
			b.WriteByte('\'')
		case "quot":
			b.WriteByte('"')
		default:
			if !strings.HasPrefix(ent, "#") {
				return "", fmt.Errorf("%w: unknown entity &%s;", errXMLSyntax, ent)
			}
			num, base := ent[1:], 10
			if strings.HasPrefix(num, "x") {
				num, base = num[1:], 16
			}
			n, err := strconv.ParseUint(num, base, 32)
			if err != nil || !utf8.ValidRune(rune(n)) {
				return "", fmt.Errorf("%w: bad character reference &%s;", errXMLSyntax, ent)
			}
			b.WriteRune(rune(n))
		}
		raw = raw[semi+1:]
	}
}

// normaliseNewlines turns \r\n and lone \r into \n, as XML parsers must.
func normaliseNewlines(s string) string {
	if strings.IndexByte(s, '\r') < 0 {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}

// localName is the part of a qualified name after its prefix.
func localName(q string) string {
	if i := strings.IndexByte(q, ':'); i >= 0 {
		return q[i+1:]
	}
	return q
}

// attr returns the raw value of the attribute of that local name, as encoding/xml matches a
// struct field's attribute: of an attribute given twice (not XML, and never libvirt's), the
// last, which encoding/xml sets over the first (found by FuzzReadDomainXML).
func (t *xmlTok) attr(name string) string {
	v := ""
	for _, a := range t.attrs {
		if localName(a.name) == name {
			v = a.value
		}
	}
	return v
}
