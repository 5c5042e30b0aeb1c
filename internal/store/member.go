package store

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"strings"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// MemberNamespace is the XML namespace of the member record, the provider's element in a
// domain's <metadata>; MemberPrefix is the prefix libvirt writes it with.
const (
	MemberNamespace = "https://virtfleet.dev/xmlns/virt/1"
	MemberPrefix    = "virt"
)

// MemberElement is the member record as it is in a domain's <metadata>. Structured parts are
// JSON inside it (Template, Desired and Preserved), so that
// `virsh metadata <domain> https://virtfleet.dev/xmlns/virt/1` shows all of it.
type MemberElement struct {
	XMLName             xml.Name `xml:"https://virtfleet.dev/xmlns/virt/1 instance"`
	Group               string   `xml:"group"`
	Index               int      `xml:"index"`
	Revision            string   `xml:"revision"`
	Template            string   `xml:"template"`
	Applied             string   `xml:"applied"`
	PreservedFromPolicy string   `xml:"preserved-from-policy"`
	PreservedFromConfig string   `xml:"preserved-from-config"`
	LastApplied         string   `xml:"last-applied"`
	InFlightAction      string   `xml:"in-flight-action"`
	InFlight            string   `xml:"in-flight"`
	Created             int64    `xml:"created"`
	Heals               int      `xml:"heals"`
	LastHeal            int64    `xml:"last-heal"`
	Preserved           string   `xml:"preserved"`
	PreservedSince      int64    `xml:"preserved-since"`
	// Move is the member's move between hosts under way (MoveRecord, as JSON); "" when none.
	// Written only while a move runs, so that a record without one reads as every earlier
	// release wrote it.
	Move string `xml:"move"`
}

// MoveRecord is a member's move between hosts as the record keeps it.
type MoveRecord struct {
	From string `json:"from"`
	To   string `json:"to"`
	Live bool   `json:"live,omitempty"`
}

// Member is what a member record holds: the group and index of the member, and its instance.
type Member struct {
	Group    string
	Index    int
	Instance engine.ManagedInstance
}

func jsonText(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

type field struct{ name, value string }

// EncodeMember renders the member record as the provider's metadata element. In a domain
// definition the element carries its namespace (declared=true); DomainSetMetadata takes it
// without one and adds the namespace itself, refusing an element that declares it already. The
// template is written in canonical form.
func EncodeMember(m Member, declared bool) (string, error) {
	mi := m.Instance
	fields := []field{{"group", m.Group}, {"index", fmt.Sprint(m.Index)}, {"revision", mi.TemplateRevision}}
	for _, f := range []struct {
		name  string
		value any
	}{
		{"template", TemplateOf(mi.Template.Canonical())}, {"applied", DesiredOf(mi.Current)},
		{"preserved-from-policy", PreservedOf(mi.PreservedFromPolicy)}, {"preserved-from-config", PreservedOf(mi.PreservedFromConfig)},
	} {
		text, err := jsonText(f.value)
		if err != nil {
			return "", err
		}
		fields = append(fields, field{f.name, text})
	}
	fields = append(fields, field{"last-applied", mi.LastAppliedHash})
	if mi.Created > 0 {
		fields = append(fields, field{"created", fmt.Sprint(mi.Created)})
	}
	if mi.Preserved != "" {
		fields = append(fields, field{"preserved", mi.Preserved}, field{"preserved-since", fmt.Sprint(mi.PreservedSince)})
	}
	if mi.Heals > 0 {
		fields = append(fields, field{"heals", fmt.Sprint(mi.Heals)}, field{"last-heal", fmt.Sprint(mi.LastHeal)})
	}
	if mi.InFlight != nil {
		text, err := jsonText(DesiredOf(*mi.InFlight))
		if err != nil {
			return "", err
		}
		fields = append(fields, field{"in-flight-action", string(ActionOf(mi.InFlightAction))}, field{"in-flight", text})
	}
	if mv := mi.Move; mv != nil {
		text, err := jsonText(MoveRecord{From: mv.From, To: mv.To, Live: mv.Live})
		if err != nil {
			return "", err
		}
		fields = append(fields, field{"move", text})
	}
	var b strings.Builder
	prefix := ""
	if declared {
		prefix = MemberPrefix + ":"
		fmt.Fprintf(&b, `<%sinstance xmlns:%s="%s">`, prefix, MemberPrefix, MemberNamespace)
	} else {
		b.WriteString("<instance>")
	}
	for _, f := range fields {
		fmt.Fprintf(&b, "<%s%s>", prefix, f.name)
		if err := xml.EscapeText(&b, []byte(f.value)); err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "</%s%s>", prefix, f.name)
	}
	fmt.Fprintf(&b, "</%sinstance>", prefix)
	return b.String(), nil
}

// DecodeMember turns the provider's metadata element into the record it holds.
func DecodeMember(e MemberElement) (Member, error) {
	m := Member{Group: e.Group, Index: e.Index}
	mi := &m.Instance
	mi.TemplateRevision, mi.LastAppliedHash, mi.Created = e.Revision, e.LastApplied, e.Created
	mi.Heals, mi.LastHeal = e.Heals, e.LastHeal
	mi.Preserved, mi.PreservedSince = e.Preserved, e.PreservedSince
	var (
		tpl              Template
		applied          Desired
		inFlight         *Desired
		policy, fromConf Preserved
	)
	for _, f := range []struct {
		name, text string
		into       any
	}{
		{"template", e.Template, &tpl}, {"applied", e.Applied, &applied},
		{"preserved-from-policy", e.PreservedFromPolicy, &policy},
		{"preserved-from-config", e.PreservedFromConfig, &fromConf},
		{"in-flight", e.InFlight, &inFlight},
	} {
		if f.text == "" {
			continue
		}
		if err := json.Unmarshal([]byte(f.text), f.into); err != nil {
			return Member{}, fmt.Errorf("provider metadata %s cannot be parsed: %w", f.name, err)
		}
	}
	mi.Template, mi.Current = tpl.Engine(), applied.Engine()
	mi.PreservedFromPolicy, mi.PreservedFromConfig = policy.Engine(), fromConf.Engine()
	mi.InFlight = ptr(inFlight, Desired.Engine)
	if e.InFlightAction != "" {
		a, err := engine.ParseAction(e.InFlightAction)
		if err != nil {
			return Member{}, fmt.Errorf("provider metadata in-flight-action cannot be parsed: %w", err)
		}
		mi.InFlightAction = a
	}
	if e.Move != "" {
		var mv MoveRecord
		if err := json.Unmarshal([]byte(e.Move), &mv); err != nil {
			return Member{}, fmt.Errorf("provider metadata move cannot be parsed: %w", err)
		}
		mi.Move = &engine.Move{From: mv.From, To: mv.To, Live: mv.Live}
	}
	return m, nil
}

// ParseMember finds the member record in the inner XML of a domain's <metadata>. It returns
// nil when the domain carries none, which is how a domain no provider created looks.
func ParseMember(inner string) (*Member, error) {
	dec := xml.NewDecoder(strings.NewReader(inner))
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil //nolint:nilerr // the end of the metadata without our element
		}
		start, ok := tok.(xml.StartElement)
		if !ok || start.Name.Space != MemberNamespace || start.Name.Local != "instance" {
			continue
		}
		var e MemberElement
		if err := dec.DecodeElement(&e, &start); err != nil {
			return nil, fmt.Errorf("provider metadata cannot be parsed: %w", err)
		}
		m, err := DecodeMember(e)
		if err != nil {
			return nil, err
		}
		return &m, nil
	}
}
