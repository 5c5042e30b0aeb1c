package seed

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestReadFile reads back what ISO wrote: every file by its real name, whatever its size, and an
// error, never a guess, for a file that is not there or an image that is not a seed.
func TestReadFile(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("0123456789abcdef", 300) // spans three sectors
	cases := map[string]struct {
		seed    Seed
		name    string
		want    string
		wantErr error
	}{
		"user-data":           {seed: fullSeed(), name: UserDataFile, want: fullSeed().UserData},
		"network-config":      {seed: fullSeed(), name: NetworkConfigFile, want: fullSeed().NetworkConfig},
		"meta-data":           {seed: fullSeed(), name: MetaDataFile, want: string(fullSeed().MetaData())},
		"empty user-data":     {seed: Seed{InstanceID: "a", Hostname: "a"}, name: UserDataFile, want: ""},
		"large user-data":     {seed: Seed{InstanceID: "a", Hostname: "a", UserData: big}, name: UserDataFile, want: big},
		"binary user-data":    {seed: Seed{InstanceID: "a", Hostname: "a", UserData: "\x00\xff#!/bin/sh\n"}, name: UserDataFile, want: "\x00\xff#!/bin/sh\n"},
		"no network-config":   {seed: Seed{InstanceID: "a", Hostname: "a"}, name: NetworkConfigFile, wantErr: ErrNoFile},
		"a name it never has": {seed: fullSeed(), name: "vendor-data", wantErr: ErrNoFile},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			img, err := tc.seed.ISO()
			if err != nil {
				t.Fatal(err)
			}
			got, err := ReadFile(img, tc.name)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("content (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadFileRefusesOtherImages(t *testing.T) {
	t.Parallel()
	img, err := fullSeed().ISO()
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][]byte{
		"empty":              nil,
		"zeros":              make([]byte, 40*sectorSize),
		"truncated":          img[:sectorRoot*sectorSize],
		"no descriptor tail": img[:(sectorSVD)*sectorSize],
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got, err := ReadFile(b, UserDataFile); err == nil {
				t.Fatalf("read %q from a broken image, want an error", got)
			}
		})
	}
}

// FuzzReadFile: whatever the bytes, ReadFile returns or fails, and never panics; on a real seed
// it reads the user data written.
func FuzzReadFile(f *testing.F) {
	img, err := fullSeed().ISO()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(img, fullSeed().UserData)
	f.Fuzz(func(t *testing.T, b []byte, userData string) {
		_, _ = ReadFile(b, UserDataFile)
		s := Seed{InstanceID: "x", Hostname: "x", UserData: userData}
		good, err := s.ISO()
		if err != nil {
			return
		}
		got, err := UserData(good)
		if err != nil || got != userData {
			t.Fatalf("UserData = %q, %v; want %q", got, err, userData)
		}
	})
}
