package libvirt

import (
	"context"
	"errors"
	"strings"
	"testing"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/google/go-cmp/cmp"
)

// busy is libvirt's refusal of a pool's refresh while a volume job runs in it.
var busy = golibvirt.Error{Code: uint32(golibvirt.ErrInternalError), Message: "internal error: pool 'virt' has asynchronous jobs running."}

// fakePoolVolumes answers a lookup by name from the volumes the pool lists; a refresh lists the
// files of its directory (onDisk) unless it is refused (refresh).
type fakePoolVolumes struct {
	listed, onDisk map[string]bool
	refresh        error
	calls          []string
}

func (f *fakePoolVolumes) StorageVolLookupByName(p golibvirt.StoragePool, name string) (golibvirt.StorageVol, error) {
	f.calls = append(f.calls, "lookup "+name)
	if f.listed[name] {
		return golibvirt.StorageVol{Pool: p.Name, Name: name}, nil
	}
	return golibvirt.StorageVol{}, golibvirt.Error{Code: uint32(golibvirt.ErrNoStorageVol), Message: "Storage volume not found: no storage vol with matching name '" + name + "'"}
}

func (f *fakePoolVolumes) StoragePoolRefresh(golibvirt.StoragePool, uint32) error {
	f.calls = append(f.calls, "refresh")
	if f.refresh != nil {
		return f.refresh
	}
	f.listed = f.onDisk
	return nil
}

// TestVolumeInPool: a volume the pool does not list is looked up again after a refresh; a refresh
// libvirt refuses (a volume job runs in the pool) is errRefreshRefused, never "not found", and
// another failed refresh is its error.
func TestVolumeInPool(t *testing.T) {
	t.Parallel()
	broken := golibvirt.Error{Code: uint32(golibvirt.ErrInternalError), Message: "cannot open directory '/var/lib/libvirt/virt-pool': Permission denied"}
	cases := map[string]struct {
		listed, onDisk []string
		refresh        error
		wantFound      bool
		wantNotFound   bool
		wantRefused    bool
		wantCalls      []string
	}{
		"listed":                        {listed: []string{"v"}, wantFound: true, wantCalls: []string{"lookup v"}},
		"copied in since the refresh":   {onDisk: []string{"v"}, wantFound: true, wantCalls: []string{"lookup v", "refresh", "lookup v"}},
		"not there":                     {wantNotFound: true, wantCalls: []string{"lookup v", "refresh", "lookup v"}},
		"refresh refused: not known":    {onDisk: []string{"v"}, refresh: busy, wantRefused: true, wantCalls: []string{"lookup v", "refresh"}},
		"refresh refused, listed":       {listed: []string{"v"}, refresh: busy, wantFound: true, wantCalls: []string{"lookup v"}},
		"refresh failed: its own error": {refresh: broken, wantCalls: []string{"lookup v", "refresh"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := &fakePoolVolumes{listed: nameSet(c.listed), onDisk: nameSet(c.onDisk), refresh: c.refresh}
			_, err := volumeInPool(f, golibvirt.StoragePool{Name: "virt"}, "v")
			if got := err == nil; got != c.wantFound {
				t.Errorf("found = %v (err %v), want %v", got, err, c.wantFound)
			}
			if got := isNotFoundLibvirt(err); got != c.wantNotFound {
				t.Errorf("not found = %v (err %v), want %v", got, err, c.wantNotFound)
			}
			if got := errors.Is(err, errRefreshRefused); got != c.wantRefused {
				t.Errorf("refused = %v (err %v), want %v", got, err, c.wantRefused)
			}
			if c.refresh != nil && !c.wantFound && !errors.Is(err, c.refresh) && !containsMessage(err, c.refresh) {
				t.Errorf("error %v does not carry libvirt's message %q", err, c.refresh)
			}
			if d := cmp.Diff(c.wantCalls, f.calls); d != "" {
				t.Errorf("calls (-want +got):\n%s", d)
			}
		})
	}
}

// TestWhileRefreshRefused: a lookup whose pool refresh is refused is tried again until it is not
// refused; when the bound ends first, the refusal is the error, never a "not found".
func TestWhileRefreshRefused(t *testing.T) {
	t.Parallel()
	refused := refreshFailed("virt", busy)
	t.Run("refused twice, then answered", func(t *testing.T) {
		t.Parallel()
		answers := []error{refused, refused, nil}
		tries := 0
		err := whileRefreshRefused(context.Background(), func() error {
			tries++
			return answers[tries-1]
		})
		if err != nil || tries != 3 {
			t.Errorf("err %v after %d tries, want nil after 3", err, tries)
		}
	})
	t.Run("another error ends it at once", func(t *testing.T) {
		t.Parallel()
		other := errors.New("look up storage pool virt: not found")
		tries := 0
		err := whileRefreshRefused(context.Background(), func() error { tries++; return other })
		if !errors.Is(err, other) || tries != 1 {
			t.Errorf("err %v after %d tries, want %v after 1", err, tries, other)
		}
	})
	t.Run("refused until the bound ends: the refusal", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancelCause(context.Background())
		tries := 0
		err := whileRefreshRefused(ctx, func() error {
			tries++
			if tries == 2 {
				cancel(errors.New("the apply's timeout"))
			}
			return refused
		})
		if !errors.Is(err, errRefreshRefused) || !containsMessage(err, busy) || !containsMessage(err, errors.New("the apply's timeout")) {
			t.Errorf("err %v: want the refusal with libvirt's message and why the wait ended", err)
		}
		if tries != 2 {
			t.Errorf("%d tries, want 2 (none after the bound ended)", tries)
		}
	})
}

func nameSet(names []string) map[string]bool {
	out := map[string]bool{}
	for _, n := range names {
		out[n] = true
	}
	return out
}

// containsMessage reports whether err's text holds want's.
func containsMessage(err, want error) bool {
	return err != nil && want != nil && strings.Contains(err.Error(), want.Error())
}
