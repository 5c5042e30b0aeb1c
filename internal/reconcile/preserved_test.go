package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

func withPolicy(s engine.GroupState, rule string) engine.GroupState {
	s.Policy = &engine.Policy{Disks: []engine.PolicyDisk{{DeviceName: "data", DeleteRule: rule}}}
	return s
}

func TestApply_replaceKeepsPreservedVolumesAndRecreatesStatelessOnes(t *testing.T) {
	t.Parallel()
	b := fake.New()
	s := withPolicy(spec(1), engine.DeleteNever)
	s.Group.Template.Disks = append(s.Group.Template.Disks, engine.Disk{DeviceName: "scratch", SizeMiB: 4})
	apply(t, b, s)
	b.Volumes["p/db-1-data.qcow2"].Data = "precious"
	b.Volumes["p/db-1-scratch.qcow2"].Data = "junk"
	s.Group.Template.BootDisk.SourceImage = "/images/new.qcow2"
	apply(t, b, s)
	if got := b.Volumes["p/db-1-data.qcow2"].Data; got != "precious" {
		t.Fatalf("preserved volume holds %q", got)
	}
	if got := b.Volumes["p/db-1-scratch.qcow2"].Data; got != "" {
		t.Fatalf("stateless volume was not recreated: %q", got)
	}
	if b.Volumes["p/db-1-boot.qcow2"].Backing != "/images/new.qcow2" {
		t.Fatal("boot volume not rebuilt from the new image")
	}
	d := b.Domains["db-1"]
	if i := slices.IndexFunc(d.Spec.Disks, func(x backend.Disk) bool { return x.DeviceName == "data" }); i < 0 || d.Spec.Disks[i].Volume != "db-1-data.qcow2" {
		t.Fatalf("preserved disk not attached under its device name: %+v", d.Spec.Disks)
	}
}

func TestApply_scaleInKeepsNeverVolumesAndScaleOutReusesThem(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		rule string
		kept bool
	}{{engine.DeleteNever, true}, {engine.DeleteOnPermanentDeletion, false}} {
		t.Run(tc.rule, func(t *testing.T) {
			b := fake.New()
			apply(t, b, withPolicy(spec(2), tc.rule))
			b.Volumes["p/db-2-data.qcow2"].Data = "precious"
			apply(t, b, withPolicy(spec(1), tc.rule))
			_, kept := b.Volumes["p/db-2-data.qcow2"]
			if kept != tc.kept {
				t.Fatalf("volume kept = %v, want %v", kept, tc.kept)
			}
			if _, ok := b.Volumes["p/db-2-boot.qcow2"]; ok {
				t.Fatal("stateless boot volume survived scale-in")
			}
			apply(t, b, withPolicy(spec(2), tc.rule))
			if tc.kept && b.Volumes["p/db-2-data.qcow2"].Data != "precious" {
				t.Fatal("scale-out did not reuse the preserved volume")
			}
		})
	}
}

func TestApply_interruptedRefreshIsSettledAfterARevert(t *testing.T) {
	t.Parallel()
	b := fake.New()
	before := spec(3)
	apply(t, b, before)
	after := spec(3)
	after.Group.Template.Metadata = map[string]string{"role": "web"}
	after.Group.Template.Disks = append(after.Group.Template.Disks, engine.Disk{DeviceName: "extra", SizeMiB: 4})
	// db-2's final record write fails after its extra disk was attached.
	writes := 0
	b.Hook = func(op, obj string) error {
		if op == "set-record" && obj == "db-2" {
			if writes++; writes == 2 {
				return errors.New("injected")
			}
		}
		return nil
	}
	if err := New(b).Apply(context.Background(), after); err == nil {
		t.Fatal("the injected fault did not fail the apply")
	}
	b.Hook = nil
	if rec := b.Domains["db-2"].Spec.Record.Instance; rec.InFlight == nil || rec.Current.Metadata["role"] != "db" {
		t.Fatalf("db-2 bookkeeping after the fault: %+v", rec)
	}
	// The configuration is reverted: db-1 and db-3 were updated and go back; db-2 carries an
	// extra disk its record does not know about, and the marker makes the next apply remove it.
	apply(t, b, before)
	for _, n := range []string{"db-1", "db-2", "db-3"} {
		d := b.Domains[n]
		if d.Spec.Record.Instance.InFlight != nil || d.Spec.Record.Instance.Current.Metadata["role"] != "db" {
			t.Fatalf("%s not at the reverted state: %+v", n, d.Spec.Record.Instance)
		}
		if slices.ContainsFunc(d.Spec.Disks, func(x backend.Disk) bool { return x.DeviceName == "extra" }) {
			t.Fatalf("%s still has the extra disk", n)
		}
		if _, ok := b.Volumes["p/"+n+"-extra.qcow2"]; ok {
			t.Fatalf("%s-extra.qcow2 left behind", n)
		}
	}
	calls := b.Calls["set-record"]
	apply(t, b, before)
	if b.Calls["set-record"] != calls {
		t.Fatal("a settled group is changed again")
	}
}

func TestApply_adoptsAnUnmanagedDomainWithoutRedefiningIt(t *testing.T) {
	t.Parallel()
	b := fake.New()
	b.Volumes["p/legacy-disk.img"] = &fake.Volume{Data: "legacy bytes"}
	dom := b.AddUnmanaged(backend.DomainSpec{Name: "legacy", Shape: engine.Shape{DomainType: "qemu", VCPU: 2, MemoryMiB: 256, Description: "by hand"}, Disks: []backend.Disk{{DeviceName: "vda", Pool: "p", Volume: "legacy-disk.img"}}})
	s := spec(1)
	e := engine.DefaultConfigEntry()
	e.Config.Disks = []engine.ConfigDisk{{DeviceName: "vda", Source: "legacy-disk.img"}}
	s.Configs = map[string]engine.ConfigEntry{"legacy": e}
	defines := b.Calls["define"]
	apply(t, b, s)
	if b.Calls["define"] != defines+1 { // db-1 only
		t.Fatalf("defines %d -> %d: the adopted domain was redefined", defines, b.Calls["define"])
	}
	got := b.Domains["legacy"]
	if got != dom || got.Unmanaged || got.Spec.Record.Group != "db" || got.ID != -1 || got.Spec.Description != "by hand" {
		t.Fatalf("adopted domain %+v", got)
	}
	if b.Volumes["p/legacy-disk.img"].Data != "legacy bytes" {
		t.Fatal("adoption touched the disk")
	}
	if p, _, err := New(b).Preview(context.Background(), s); err != nil || len(p.Steps)+len(p.Create) != 0 {
		t.Fatalf("adopted member changes again: %+v %v", p, err)
	}
}

func TestChange_retriesWhenAnotherWriterWins(t *testing.T) {
	t.Parallel()
	b := fake.New()
	r := New(b)
	ctx := context.Background()
	if _, err := r.Change(ctx, "db", "p", func(s *engine.GroupState, exists bool) error {
		*s = spec(0)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// Many writers each add their own config; none may be lost.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := r.Change(ctx, "db", "p", func(s *engine.GroupState, exists bool) error {
				if !exists {
					return errors.New("record vanished")
				}
				if s.Configs == nil {
					s.Configs = map[string]engine.ConfigEntry{}
				}
				s.Configs[fmt.Sprintf("n-%d", i)] = engine.DefaultConfigEntry()
				return nil
			})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	s, err := r.Load(ctx, "db")
	if err != nil || len(s.Configs) != 8 {
		t.Fatalf("configs %v, %v", s.Configs, err)
	}
	if _, err := r.Load(ctx, "nope"); !errors.Is(err, backend.ErrNotFound) || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("missing group: %v", err)
	}
}
