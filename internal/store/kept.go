package store

import (
	"encoding/json"
	"fmt"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// KeptRecord is a group's kept record as stored (engine.KeptRecordName): the volumes a destroyed
// group of that name kept, for the next group of the name to take over (engine/kept.go).
type KeptRecord struct {
	Format  string       `json:"format"`
	Volumes []KeptVolume `json:"volumes"`
}

// KeptVolume is one volume of a kept record.
type KeptVolume struct {
	Host string `json:"host"`
	Name string `json:"name"`
}

const keptFormat = "virt-kept-volumes/1"

// EncodeKept is the kept record of the volumes.
func EncodeKept(kept []engine.Made) ([]byte, error) {
	r := KeptRecord{Format: keptFormat, Volumes: []KeptVolume{}}
	for _, m := range kept {
		r.Volumes = append(r.Volumes, KeptVolume{Host: m.Host, Name: m.Name})
	}
	return json.Marshal(r)
}

// DecodeKept is the volumes of a kept record.
func DecodeKept(data []byte) ([]engine.Made, error) {
	var r KeptRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("kept record: %w", err)
	}
	if r.Format != keptFormat {
		return nil, fmt.Errorf("kept record of format %q: this provider reads %q", r.Format, keptFormat)
	}
	out := make([]engine.Made, 0, len(r.Volumes))
	for _, v := range r.Volumes {
		out = append(out, engine.Made{Kind: engine.MadeVolume, Host: v.Host, Name: v.Name, Confirmed: true})
	}
	return out, nil
}
