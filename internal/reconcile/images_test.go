package reconcile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// imageFile writes data to a new file in dir and returns its path and the sha256 of data.
func imageFile(t *testing.T, dir, name, data string) (string, string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(data))
	return p, hex.EncodeToString(sum[:])
}

// readsFiles is a reconciler whose hosts' files are this machine's.
func readsFiles(b *fake.Backend) *Reconciler {
	r := New(b)
	r.ReadsFiles = func(string) bool { return true }
	return r
}

// TestApply_hostImageCopied: a source_image outside the pools is copied into the group's pool
// with its bytes, and the boot volumes back onto the copy, never onto the path.
func TestApply_hostImageCopied(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	img, sum := imageFile(t, dir, "base.img", "harmless image bytes")
	link := filepath.Join(dir, "link.img")
	if err := os.Symlink(img, link); err != nil {
		t.Fatal(err)
	}
	b := fake.New()
	s := spec(2)
	s.Group.Template.BootDisk.SourceImage = link
	if err := readsFiles(b).Apply(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	copyName := engine.ImageVolumeName("db", sum, "raw")
	v := b.Volumes["p/"+copyName]
	if v == nil || v.Data != "harmless image bytes" {
		t.Fatalf("image volume %s: %+v, want the image's bytes", copyName, v)
	}
	for _, boot := range []string{"db-1-boot.qcow2", "db-2-boot.qcow2"} {
		got := b.Volumes["p/"+boot]
		if got == nil || got.Backing != "" || got.BackingVolume != copyName {
			t.Errorf("boot volume %s: %+v, want an overlay of %s and no path", boot, got, copyName)
		}
	}
	if n := b.Calls["upload-volume"]; n != 1 {
		t.Errorf("the image was uploaded %d times, want once", n)
	}
}

// TestApply_recordedCopyNotReadAgain: with the group's copy recorded, a scale-out backs onto it
// and the file its name now reaches (a link swapped) is not read into the pool.
func TestApply_recordedCopyNotReadAgain(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	img, sum := imageFile(t, dir, "base.img", "harmless image bytes")
	secret, _ := imageFile(t, dir, "shadow", "root's secret bytes")
	link := filepath.Join(dir, "link.img")
	if err := os.Symlink(img, link); err != nil {
		t.Fatal(err)
	}
	b := fake.New()
	s := spec(1)
	s.Group.Template.BootDisk.SourceImage = link
	if err := readsFiles(b).Apply(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	copyName := engine.ImageVolumeName("db", sum, "raw")
	s.Images = map[string][]engine.HostImage{engine.DefaultHost: {{Source: link, Volume: copyName, Format: "raw", SHA256: sum, Bytes: 20, VirtualBytes: 20}}}
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	s.Group.TargetSize = 2
	if err := readsFiles(b).Apply(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	var images []string
	for key, v := range b.Volumes {
		if strings.Contains(v.Data, "secret") {
			t.Errorf("volume %s holds the swapped file's bytes", key)
		}
		if strings.Contains(key, "-image-") {
			images = append(images, key)
		}
	}
	if diff := cmp.Diff([]string{"p/" + copyName}, images); diff != "" {
		t.Errorf("image volumes (-want +got):\n%s", diff)
	}
	if got := b.Volumes["p/db-2-boot.qcow2"]; got == nil || got.BackingVolume != copyName {
		t.Errorf("db-2's boot volume: %+v, want an overlay of %s", got, copyName)
	}
}

// TestApply_copyGoneAndFileChanged: a recorded copy deleted by hand is made again only from
// bytes of its digest: a file changed since is refused, and no copy is left.
func TestApply_copyGoneAndFileChanged(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	img, _ := imageFile(t, dir, "base.img", "other bytes now")
	b := fake.New()
	s := spec(1)
	s.Group.Template.BootDisk.SourceImage = img
	const copyName = "db-image-0123456789ab.raw"
	s.Images = map[string][]engine.HostImage{engine.DefaultHost: {{Source: img, Volume: copyName, Format: "raw", SHA256: "0123456789abcdef", Bytes: 15, VirtualBytes: 15}}}
	err := readsFiles(b).Apply(context.Background(), s)
	if err == nil || !strings.Contains(err.Error(), "changed since the plan read it") {
		t.Fatalf("apply: %v, want a refusal of the changed file", err)
	}
	if _, ok := b.Volumes["p/"+copyName]; ok {
		t.Errorf("the copy of changed bytes was left in the pool")
	}
	if _, ok := b.Volumes["p/db-1-boot.qcow2"]; ok {
		t.Errorf("a boot volume was made without its image")
	}
}
