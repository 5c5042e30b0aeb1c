//go:build windows

package hostfile

import (
	"errors"
	"os"
)

// Open: libvirt hosts whose files the provider reads are unix machines.
func Open(string, Owners) (*os.File, Opened, error) {
	return nil, Opened{}, errors.New("host files are read only on unix machines")
}

// NotALink: libvirt hosts whose files the provider sees are unix machines.
func NotALink(string, string) string { return "" }

// InPlace: libvirt hosts whose files the provider sees are unix machines.
func InPlace(string, bool, Owners) string { return "" }
