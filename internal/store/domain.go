package store

import (
	"encoding/xml"
	"fmt"
	"strings"
)

// The adoption record is what the virt_domain resource writes in the <metadata> of a domain it
// adopted: which Terraform state owns it and since when. It is a record kind of its own, apart
// from the member record, in its own namespace: libvirt keeps one metadata element per
// namespace, so writing or removing one never touches the other, and the group code, which
// reads only MemberNamespace, sees such a domain as one no group manages (it is not a member).
//
// Its format is versioned apart from the group and member records (Version): the namespace
// names its version, DomainVersion, and TestDomainFingerprint holds it to what it writes. A
// change to a field is a new namespace (".../virt-domain/2") read beside this one.
const (
	DomainNamespace = "https://virtfleet.dev/xmlns/virt-domain/1"
	DomainPrefix    = "virtdom"
	DomainVersion   = 1
)

// DomainElement is the adoption record as it is in a domain's <metadata>. Owner is the
// random ID the adopting state keeps in its private state; Since is when it adopted the
// domain, in Unix seconds.
type DomainElement struct {
	// XMLName has no namespace: libvirt returns the element without it (see ParseAdoption);
	// EncodeAdoption writes it with DomainNamespace.
	XMLName xml.Name `xml:"adopted"`
	Owner   string   `xml:"owner"`
	Since   int64    `xml:"since"`
}

// Adoption is what an adoption record holds.
type Adoption struct {
	Owner string
	Since int64
}

// EncodeAdoption renders the adoption record as its metadata element: with its namespace
// declared (declared=true) for a definition, without for DomainSetMetadata, which adds it.
func EncodeAdoption(a Adoption, declared bool) (string, error) {
	prefix := ""
	var b strings.Builder
	if declared {
		prefix = DomainPrefix + ":"
		fmt.Fprintf(&b, `<%sadopted xmlns:%s="%s">`, prefix, DomainPrefix, DomainNamespace)
	} else {
		b.WriteString("<adopted>")
	}
	for _, f := range []field{{"owner", a.Owner}, {"since", fmt.Sprint(a.Since)}} {
		fmt.Fprintf(&b, "<%s%s>", prefix, f.name)
		if err := xml.EscapeText(&b, []byte(f.value)); err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "</%s%s>", prefix, f.name)
	}
	fmt.Fprintf(&b, "</%sadopted>", prefix)
	return b.String(), nil
}

// ParseAdoption reads the adoption record from the element DomainGetMetadata returns for
// DomainNamespace. libvirt gives it back without its namespace (`<adopted><owner>...`), having
// chosen it by the namespace already, so the element is matched by its local name. It returns
// nil for an empty document.
func ParseAdoption(doc string) (*Adoption, error) {
	if strings.TrimSpace(doc) == "" {
		return nil, nil
	}
	var e DomainElement
	if err := xml.Unmarshal([]byte(doc), &e); err != nil {
		return nil, fmt.Errorf("provider adoption metadata cannot be parsed: %w", err)
	}
	if e.Owner == "" {
		return nil, fmt.Errorf("provider adoption metadata names no owner")
	}
	return &Adoption{Owner: e.Owner, Since: e.Since}, nil
}

// HasAdoption reports whether the inner XML of a domain's <metadata> holds an adoption element
// (DomainNamespace, local name "adopted") among its top-level elements, where libvirt keeps each
// application's: the listing's way to tell a domain that a virt_domain resource manages, without
// reading its record. Namespaces declared outside the inner XML are not seen, as for the member
// record; what follows XML that does not parse is not seen either.
func HasAdoption(inner string) bool {
	d := xml.NewDecoder(strings.NewReader(inner))
	depth := 0
	for {
		t, err := d.Token()
		if err != nil {
			return false
		}
		switch t := t.(type) {
		case xml.StartElement:
			if depth == 0 && t.Name.Space == DomainNamespace && t.Name.Local == "adopted" {
				return true
			}
			depth++
		case xml.EndElement:
			depth--
		}
	}
}
