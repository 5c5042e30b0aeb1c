// This file holds the domain's reader on top of xmlScanner: its walk over elements and the domain and metadata handlers.

package libvirt

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/store"
)

// domScan reads the part of a domain's XML a listing keeps, with xmlScanner, into the same
// structs encoding/xml fills in readDomainXMLDecoded.
type domScan struct {
	x xmlScanner
	t xmlTok
	// adopted is set when a <metadata> holds a virt_domain adoption record (store.HasAdoption).
	adopted bool
}

// readDomainXML reads what a listing keeps of a domain from its XML.
func readDomainXML(doc string) (*parsedDomain, error) {
	d := domScan{x: xmlScanner{s: doc}}
	dom, rec, err := d.domain()
	if err != nil {
		return nil, err
	}
	p := &parsedDomain{targets: map[string]string{}, used: map[string]bool{}, typ: dom.Type, description: dom.Description, record: rec, adopted: d.adopted}
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
	p.graphicsPort = dom.Devices.GraphicsPort
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
		if depth == 1 && space == store.DomainNamespace && local == "adopted" {
			d.adopted = true
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
		case "move":
			rx.Move, err = d.text()
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
