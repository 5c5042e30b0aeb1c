package libvirt

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/store"
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
// struct field's attribute.
func (t *xmlTok) attr(name string) string {
	for _, a := range t.attrs {
		if localName(a.name) == name {
			return a.value
		}
	}
	return ""
}

// domScan reads the part of a domain's XML a listing keeps, with xmlScanner, into the same
// structs encoding/xml fills in readDomainXMLDecoded.
type domScan struct {
	x xmlScanner
	t xmlTok
}

// readDomainXML reads what a listing keeps of a domain from its XML.
func readDomainXML(doc string) (*parsedDomain, error) {
	d := domScan{x: xmlScanner{s: doc}}
	dom, rec, err := d.domain()
	if err != nil {
		return nil, err
	}
	p := &parsedDomain{targets: map[string]string{}, used: map[string]bool{}, typ: dom.Type, description: dom.Description, record: rec}
	if dom.VCPU != nil {
		p.vcpu = int64(*dom.VCPU)
	}
	if m := dom.Memory; m != nil {
		p.memoryMiB = int64(memoryMiB(m.Value, m.Unit))
	}
	if dom.Devices == nil {
		return p, nil
	}
	for _, i := range dom.Devices.Interfaces {
		p.addInterface(i)
	}
	for _, c := range dom.Devices.Channels {
		if t := c.Target; t != nil {
			p.addChannel(t.Type, t.Name, t.State)
		}
	}
	for _, disk := range dom.Devices.Disks {
		p.addDisk(disk)
	}
	return p, nil
}

func (d *domScan) next() error { return d.x.next(&d.t) }

// attr is the start tag's attribute of that local name, entities replaced.
func (d *domScan) attr(name string) (string, error) { return unescape(d.t.attr(name)) }

// children calls fn for each child element of the element whose start tag was just read, with
// that child's start tag as the current token, and returns after the element's end tag. fn must
// consume the child whole (down to its end tag) or call skip.
func (d *domScan) children(fn func(local string) error) error {
	if d.t.selfClose {
		return nil
	}
	name := d.t.name
	for {
		if err := d.next(); err != nil {
			return err
		}
		switch d.t.kind {
		case tokEOF:
			return d.x.fail("unexpected end of document inside <" + name + ">")
		case tokEnd:
			if d.t.name != name {
				return d.x.fail("<" + name + "> closed by </" + d.t.name + ">")
			}
			return nil
		case tokText:
			if !d.t.cdata {
				if _, err := unescape(d.t.text); err != nil {
					return err
				}
			}
		case tokStart:
			if err := fn(localName(d.t.name)); err != nil {
				return err
			}
		}
	}
}

// skip consumes the element whose start tag was just read.
func (d *domScan) skip() error {
	return d.children(func(string) error { return d.skip() })
}

// text consumes the element whose start tag was just read and returns its own character data.
func (d *domScan) text() (string, error) {
	var b strings.Builder
	if d.t.selfClose {
		return "", nil
	}
	name := d.t.name
	for {
		if err := d.next(); err != nil {
			return "", err
		}
		switch d.t.kind {
		case tokEOF:
			return "", d.x.fail("unexpected end of document inside <" + name + ">")
		case tokEnd:
			if d.t.name != name {
				return "", d.x.fail("<" + name + "> closed by </" + d.t.name + ">")
			}
			return b.String(), nil
		case tokText:
			if d.t.cdata {
				b.WriteString(d.t.text)
				continue
			}
			s, err := unescape(d.t.text)
			if err != nil {
				return "", err
			}
			b.WriteString(s)
		case tokStart:
			if err := d.skip(); err != nil {
				return "", err
			}
		}
	}
}

func (d *domScan) uintText() (uint, error) {
	s, err := d.text()
	if err != nil {
		return 0, err
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return uint(n), err
}

func (d *domScan) intText(bits int) (int64, error) {
	s, err := d.text()
	if err != nil {
		return 0, err
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	return strconv.ParseInt(s, 10, bits)
}

func (d *domScan) domain() (dom xmlDomain, rec *backend.Record, err error) {
	for {
		if err := d.next(); err != nil {
			return dom, nil, err
		}
		if d.t.kind == tokEOF {
			return dom, nil, d.x.fail("no root element")
		}
		if d.t.kind == tokStart {
			break
		}
	}
	if localName(d.t.name) != "domain" {
		return dom, nil, d.x.fail("root element is <" + d.t.name + ">, not <domain>")
	}
	if dom.Type, err = d.attr("type"); err != nil {
		return dom, nil, err
	}
	err = d.children(func(local string) error {
		var err error
		switch local {
		case "description":
			dom.Description, err = d.text()
		case "vcpu":
			var v uint
			v, err = d.uintText()
			dom.VCPU = &v
		case "memory":
			m := &xmlMemory{}
			if m.Unit, err = d.attr("unit"); err != nil {
				return err
			}
			m.Value, err = d.uintText()
			dom.Memory = m
		case "metadata":
			var r *backend.Record
			r, err = d.metadata()
			if rec == nil {
				rec = r
			}
		case "devices":
			dom.Devices = &xmlDevices{}
			err = d.devices(dom.Devices)
		default:
			err = d.skip()
		}
		return err
	})
	return dom, rec, err
}

// metadata finds the provider's element among the metadata, as parseRecord does in the inner
// XML alone: namespaces declared outside <metadata> are not seen.
func (d *domScan) metadata() (*backend.Record, error) {
	var rec *backend.Record
	type binding struct {
		prefix, uri string
		depth       int
	}
	var scope []binding
	depth := 0
	var walk func(local string) error
	walk = func(local string) error {
		depth++
		defer func() {
			depth--
			for len(scope) > 0 && scope[len(scope)-1].depth > depth {
				scope = scope[:len(scope)-1]
			}
		}()
		for _, a := range d.t.attrs {
			switch {
			case a.name == "xmlns":
				v, err := unescape(a.value)
				if err != nil {
					return err
				}
				scope = append(scope, binding{"", v, depth})
			case strings.HasPrefix(a.name, "xmlns:"):
				v, err := unescape(a.value)
				if err != nil {
					return err
				}
				scope = append(scope, binding{a.name[len("xmlns:"):], v, depth})
			}
		}
		prefix := ""
		if i := strings.IndexByte(d.t.name, ':'); i >= 0 {
			prefix = d.t.name[:i]
		}
		space := prefix
		for i := len(scope) - 1; i >= 0; i-- {
			if scope[i].prefix == prefix {
				space = scope[i].uri
				break
			}
		}
		if rec == nil && space == Namespace && local == "instance" {
			rx, err := d.recordElement()
			if err != nil {
				return err
			}
			if rec, err = recordOf(rx); err != nil {
				return err
			}
			return nil
		}
		return d.children(walk)
	}
	return rec, d.children(walk)
}

// recordElement reads the provider's element into a store.MemberElement as encoding/xml would.
func (d *domScan) recordElement() (store.MemberElement, error) {
	var rx store.MemberElement
	err := d.children(func(local string) error {
		var err error
		var n int64
		switch local {
		case "group":
			rx.Group, err = d.text()
		case "index":
			n, err = d.intText(strconv.IntSize)
			rx.Index = int(n)
		case "revision":
			rx.Revision, err = d.text()
		case "template":
			rx.Template, err = d.text()
		case "applied":
			rx.Applied, err = d.text()
		case "preserved-from-policy":
			rx.PreservedFromPolicy, err = d.text()
		case "preserved-from-config":
			rx.PreservedFromConfig, err = d.text()
		case "last-applied":
			rx.LastApplied, err = d.text()
		case "in-flight-action":
			rx.InFlightAction, err = d.text()
		case "in-flight":
			rx.InFlight, err = d.text()
		case "created":
			rx.Created, err = d.intText(64)
		case "heals":
			n, err = d.intText(strconv.IntSize)
			rx.Heals = int(n)
		case "last-heal":
			rx.LastHeal, err = d.intText(64)
		case "preserved":
			rx.Preserved, err = d.text()
		case "preserved-since":
			rx.PreservedSince, err = d.intText(64)
		default:
			err = d.skip()
		}
		if err != nil {
			return fmt.Errorf("provider metadata cannot be parsed: %w", err)
		}
		return nil
	})
	return rx, err
}

func (d *domScan) devices(devs *xmlDevices) error {
	return d.children(func(local string) error {
		switch local {
		case "disk":
			var disk xmlDisk
			err := d.disk(&disk)
			devs.Disks = append(devs.Disks, disk)
			return err
		case "interface":
			var i xmlInterface
			err := d.iface(&i)
			devs.Interfaces = append(devs.Interfaces, i)
			return err
		case "channel":
			var c xmlChannel
			err := d.channel(&c)
			devs.Channels = append(devs.Channels, c)
			return err
		}
		return d.skip()
	})
}

func (d *domScan) disk(disk *xmlDisk) error {
	var err error
	if disk.Type, err = d.attr("type"); err != nil {
		return err
	}
	return d.children(func(local string) error {
		var err error
		switch local {
		case "source":
			if disk.Source == nil {
				disk.Source = &xmlDiskSource{}
			}
			err = d.setAttrs(map[string]*string{"file": &disk.Source.File, "dev": &disk.Source.Dev, "pool": &disk.Source.Pool, "volume": &disk.Source.Volume})
		case "target":
			if disk.Target == nil {
				disk.Target = &xmlTarget{}
			}
			err = d.setAttrs(map[string]*string{"dev": &disk.Target.Dev})
		case "readonly":
			disk.ReadOnly = true
		case "serial":
			disk.Serial, err = d.text()
			return err
		case "alias":
			if disk.Alias == nil {
				disk.Alias = new(string)
			}
			err = d.setAttrs(map[string]*string{"name": disk.Alias})
		}
		if err != nil {
			return err
		}
		return d.skip()
	})
}

func (d *domScan) iface(i *xmlInterface) error {
	var err error
	if i.Type, err = d.attr("type"); err != nil {
		return err
	}
	return d.children(func(local string) error {
		var err error
		switch local {
		case "mac":
			if i.MAC == nil {
				i.MAC = new(string)
			}
			err = d.setAttrs(map[string]*string{"address": i.MAC})
		case "source":
			if i.Network == nil {
				i.Network = new(string)
			}
			err = d.setAttrs(map[string]*string{"network": i.Network})
		}
		if err != nil {
			return err
		}
		return d.skip()
	})
}

func (d *domScan) channel(c *xmlChannel) error {
	return d.children(func(local string) error {
		if local == "target" {
			if c.Target == nil {
				c.Target = &xmlChannelTarget{}
			}
			if err := d.setAttrs(map[string]*string{"type": &c.Target.Type, "name": &c.Target.Name, "state": &c.Target.State}); err != nil {
				return err
			}
		}
		return d.skip()
	})
}

// setAttrs sets each named string to the value of the tag's attribute of that local name, when
// the tag has it: a second element of the same kind changes only what it gives, as encoding/xml
// does when it fills the same struct again.
func (d *domScan) setAttrs(into map[string]*string) error {
	for _, a := range d.t.attrs {
		if p, ok := into[localName(a.name)]; ok {
			v, err := unescape(a.value)
			if err != nil {
				return err
			}
			*p = v
		}
	}
	return nil
}
