package store

import (
	"encoding/json"
	"fmt"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// EncodeGroup is the body of a group record holding r, indented for people who read it with
// virsh.
func EncodeGroup(r engine.GroupRecord) ([]byte, error) {
	return json.MarshalIndent(GroupRecordOf(r), "", "  ")
}

// DecodeGroup reads the body of a group record.
func DecodeGroup(data []byte) (engine.GroupRecord, error) {
	var s GroupRecord
	if err := json.Unmarshal(data, &s); err != nil {
		return engine.GroupRecord{}, err
	}
	r, err := s.Engine()
	if err != nil {
		return engine.GroupRecord{}, fmt.Errorf("group record: %w", err)
	}
	return r, nil
}
