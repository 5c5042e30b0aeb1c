package store

import "github.com/virtfleet/terraform-provider-virt/internal/engine"

// Graphics is engine.Graphics as stored: the password's version, never the password.
type Graphics struct {
	Type            string `json:"type"`
	Listen          string `json:"listen"`
	PasswordVersion int64  `json:"password_version,omitempty"`
}

// Filesystem is engine.Filesystem as stored.
type Filesystem struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"read_only,omitempty"`
}

// ResourceGraphics is the template's graphics block as configured (version 4): the password's
// version, never the write-only password.
type ResourceGraphics struct {
	Type            string  `json:"type"`
	Listen          *string `json:"listen,omitempty"`
	PasswordVersion *int64  `json:"password_wo_version,omitempty"`
}

// ResourceFilesystem is one filesystem block as configured (version 4).
type ResourceFilesystem struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly *bool  `json:"read_only,omitempty"`
}

func graphicsOf(g engine.Graphics) Graphics {
	return Graphics{Type: g.Type, Listen: g.Listen, PasswordVersion: g.PasswordVersion}
}

// Engine is the stored graphics as the engine's.
func (g Graphics) Engine() engine.Graphics {
	return engine.Graphics{Type: g.Type, Listen: g.Listen, PasswordVersion: g.PasswordVersion}
}

func filesystemOf(f engine.Filesystem) Filesystem {
	return Filesystem{Source: f.Source, Target: f.Target, ReadOnly: f.ReadOnly}
}

// Engine is the stored share as the engine's.
func (f Filesystem) Engine() engine.Filesystem {
	return engine.Filesystem{Source: f.Source, Target: f.Target, ReadOnly: f.ReadOnly}
}
