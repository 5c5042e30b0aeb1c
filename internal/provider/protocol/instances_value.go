package protocol

// The conversion of the group's value between Terraform's shape of `instances` (a map of objects
// by member name, msgpack on the wire, JSON in stored state) and the framework's (the JSON text of
// the members' list, in member order): see instances.go for why the two differ.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// ToFramework rewrites, in place, a group value from Terraform for the framework: the map in
// `instances` becomes the JSON text of its members' list, in their order.
func ToFramework(v *tfprotov6.DynamicValue) error {
	return rewriteInstances(v, "from Terraform", func(dec *msgpack.Decoder, enc *msgpack.Encoder) error {
		n, err := dec.DecodeMapLen()
		if err != nil {
			return err
		}
		rows := make([]map[string]any, 0, max(n, 0))
		for range n {
			if _, err := dec.DecodeString(); err != nil {
				return err
			}
			row := map[string]any{}
			m, err := dec.DecodeMapLen()
			if err != nil {
				return err
			}
			for range m {
				k, err := dec.DecodeString()
				if err != nil {
					return err
				}
				if row[k], err = dec.DecodeInterfaceLoose(); err != nil {
					return fmt.Errorf("attribute %s: %w", k, err)
				}
			}
			rows = append(rows, row)
		}
		sortRows(rows)
		js, err := json.Marshal(rows)
		if err != nil {
			return err
		}
		return enc.EncodeString(string(js))
	}, msgpcode.IsFixedMap, msgpcode.Map16, msgpcode.Map32)
}

// ToTerraform rewrites, in place, a group value from the framework for Terraform: the JSON text
// in `instances` becomes the map by member name, each member with every attribute of the schema.
func ToTerraform(v *tfprotov6.DynamicValue) error {
	return rewriteInstances(v, "from the provider", func(dec *msgpack.Decoder, enc *msgpack.Encoder) error {
		text, err := dec.DecodeString()
		if err != nil {
			return err
		}
		rows, err := parseInstanceRows(text)
		if err != nil {
			return err
		}
		seen := make(map[string]bool, len(rows))
		for _, row := range rows {
			name, ok := row["name"].(string)
			if !ok || name == "" || seen[name] {
				return fmt.Errorf("instances: a member without a name of its own: %v", row["name"])
			}
			seen[name] = true
		}
		if err := enc.EncodeMapLen(len(rows)); err != nil {
			return err
		}
		for _, row := range rows {
			if err := enc.EncodeString(row["name"].(string)); err != nil {
				return err
			}
			if err := enc.EncodeMapLen(len(InstanceAttributes)); err != nil {
				return err
			}
			for _, ia := range InstanceAttributes {
				if err := enc.EncodeString(ia.Name); err != nil {
					return err
				}
				if err := encodeInstanceValue(enc, ia, row[ia.Name]); err != nil {
					return err
				}
			}
		}
		return nil
	}, msgpcode.IsFixedString, msgpcode.Str8, msgpcode.Str16, msgpcode.Str32)
}

// sortRows puts members read from a map (ordered by name) in the order the provider lists them
// (engine.SortMembers), so that the framework's text is the provider's own.
func sortRows(rows []map[string]any) {
	slices.SortStableFunc(rows, func(a, b map[string]any) int {
		an, _ := a["name"].(string)
		bn, _ := b["name"].(string)
		return engine.MemberOrder(rowIndex(a), an, rowIndex(b), bn)
	})
}

// rowIndex is a member row's index, however its decoder gave the number.
func rowIndex(row map[string]any) int {
	switch v := row["index"].(type) {
	case int64:
		return int(v)
	case uint64:
		return int(v)
	case float64:
		return int(v)
	case json.Number:
		i, _ := v.Int64()
		return int(i)
	}
	return 0
}

// parseInstanceRows reads the JSON text of `instances`, numbers kept as written.
func parseInstanceRows(text string) ([]map[string]any, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var rows []map[string]any
	if err := dec.Decode(&rows); err != nil {
		return nil, fmt.Errorf("instances is not a JSON list of objects: %w", err)
	}
	return rows, nil
}

func encodeInstanceValue(enc *msgpack.Encoder, ia instanceAttribute, v any) error {
	switch v := v.(type) {
	case nil:
		return enc.EncodeNil()
	case string:
		if !ia.Number {
			return enc.EncodeString(v)
		}
	case json.Number:
		if ia.Number {
			if i, err := v.Int64(); err == nil {
				return enc.EncodeInt(i)
			}
		}
	}
	return fmt.Errorf("instances: attribute %s: %v (%T) is not a %s", ia.Name, v, v, map[bool]string{true: "whole number", false: "string"}[ia.Number])
}

// rewriteInstances rewrites the msgpack encoding of a group value in place: the value of
// `instances`, when its first byte is one of the given codes, is re-encoded by rewrite; every
// other attribute is copied byte for byte. A value that is not an object (null, unknown) and an
// `instances` that is null or unknown are left as they are.
func rewriteInstances(v *tfprotov6.DynamicValue, from string, rewrite func(*msgpack.Decoder, *msgpack.Encoder) error, isCode func(byte) bool, codes ...byte) error {
	if v == nil || len(v.MsgPack) == 0 {
		return nil
	}
	dec := msgpack.NewDecoder(bytes.NewReader(v.MsgPack))
	c, err := dec.PeekCode()
	if err != nil {
		return fmt.Errorf("decode the group's value %s: %w", from, err)
	}
	if !msgpcode.IsFixedMap(c) && c != msgpcode.Map16 && c != msgpcode.Map32 {
		return nil
	}
	n, err := dec.DecodeMapLen()
	if err != nil {
		return fmt.Errorf("decode the group's value %s: %w", from, err)
	}
	var out bytes.Buffer
	out.Grow(len(v.MsgPack))
	enc := msgpack.NewEncoder(&out)
	if err := enc.EncodeMapLen(n); err != nil {
		return err
	}
	for range n {
		k, err := dec.DecodeString()
		if err != nil {
			return fmt.Errorf("decode the group's value %s: %w", from, err)
		}
		if err := enc.EncodeString(k); err != nil {
			return err
		}
		if k == InstancesAttrName {
			c, err := dec.PeekCode()
			if err != nil {
				return fmt.Errorf("decode the group's instances %s: %w", from, err)
			}
			if isCode(c) || bytes.IndexByte(codes, c) >= 0 {
				if err := rewrite(dec, enc); err != nil {
					return fmt.Errorf("rewrite the group's instances %s: %w", from, err)
				}
				continue
			}
		}
		raw, err := dec.DecodeRaw()
		if err != nil {
			return fmt.Errorf("decode the group's value %s: %w", from, err)
		}
		if err := enc.Encode(raw); err != nil {
			return err
		}
	}
	v.MsgPack = out.Bytes()
	return nil
}

// InstancesJSONToFramework rewrites state as Terraform stores it (JSON, of any schema version)
// for the framework: the map in `instances` (or the list state written before it was a map) becomes
// the JSON text of its members' list, in their order.
func InstancesJSONToFramework(state []byte) ([]byte, error) {
	var st map[string]json.RawMessage
	if err := json.Unmarshal(state, &st); err != nil {
		return nil, err
	}
	raw, ok := st[InstancesAttrName]
	raw = bytes.TrimSpace(raw)
	if !ok || len(raw) == 0 || (raw[0] != '[' && raw[0] != '{') {
		return state, nil
	}
	var list []json.RawMessage
	if raw[0] == '[' {
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, err
		}
	} else {
		var byName map[string]json.RawMessage
		if err := json.Unmarshal(raw, &byName); err != nil {
			return nil, err
		}
		rows := make([]map[string]any, 0, len(byName))
		for _, m := range byName {
			dec := json.NewDecoder(bytes.NewReader(m))
			dec.UseNumber()
			var row map[string]any
			if err := dec.Decode(&row); err != nil {
				return nil, err
			}
			rows = append(rows, row)
		}
		sortRows(rows)
		for _, row := range rows {
			m, err := json.Marshal(row)
			if err != nil {
				return nil, err
			}
			list = append(list, m)
		}
	}
	js, err := json.Marshal(list)
	if err != nil {
		return nil, err
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, js); err != nil {
		return nil, err
	}
	text, err := json.Marshal(compact.String())
	if err != nil {
		return nil, err
	}
	st[InstancesAttrName] = text
	return json.Marshal(st)
}
