package libvirt

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
)

// TestAccLookupVolume_copiedInWhileACloneRuns: a file copied into a pool's directory while libvirt
// clones a volume of that pool (a job during which libvirt refuses the pool's refresh) is found:
// the lookup asks the refresh again until the clone is done, where it used to answer "not found"
// at the first refusal. The pool is the test's own, so that its job refuses no other test's
// refresh. The clone is of a 2 GiB sparse volume, which takes libvirt seconds to read; the test
// waits until a refresh is refused (the clone runs) before it copies the file in, and fails when
// the clone was over before any refresh was refused.
func TestAccLookupVolume_copiedInWhileACloneRuns(t *testing.T) {
	requireAcc(t)
	b := connectAcc(t, "qemu:///system")
	ctx := context.Background()
	name := "tfacc-hfix-lk-" + testSuffix()
	dir := "/var/lib/libvirt/" + name
	pool, err := b.CreatePool(ctx, name, dir)
	if err != nil {
		t.Fatalf("create pool: %v", err)
	}
	t.Cleanup(func() {
		if err := b.RefreshPool(ctx, name); err != nil {
			t.Errorf("refresh pool: %v", err)
		}
		for _, v := range []string{"source.img", "clone.img", "copied.img"} {
			if err := b.DeleteVolume(ctx, name, v); err != nil && !errors.Is(err, backend.ErrNotFound) {
				t.Errorf("delete volume %s: %v", v, err)
			}
		}
		if err := b.DeletePool(ctx, pool.UUID); err != nil {
			t.Errorf("delete pool: %v", err)
		}
		_ = os.RemoveAll(dir)
	})
	if err := os.Truncate(mustCreate(t, filepath.Join(dir, "source.img")), 2<<30); err != nil {
		t.Fatal(err)
	}
	if err := b.RefreshPool(ctx, name); err != nil {
		t.Fatal(err)
	}

	// The clone runs on a connection of its own.
	c := rawConn(connectAcc(t, "qemu:///system"))
	p, err := c.pool(name)
	if err != nil {
		t.Fatal(err)
	}
	src, err := c.l.StorageVolLookupByName(p, "source.img")
	if err != nil {
		t.Fatal(err)
	}
	cloned := make(chan error, 1)
	go func() {
		_, err := c.l.StorageVolCreateXMLFrom(p, `<volume><name>clone.img</name><capacity unit="G">2</capacity><target><format type="raw"/></target></volume>`, src, 0)
		cloned <- err
	}()
	t.Cleanup(func() {
		if err := <-cloned; err != nil {
			t.Errorf("clone: %v", err)
		}
	})
	running := false
	probe := rawConn(b)
	for deadline := time.Now().Add(time.Minute); !running && time.Now().Before(deadline); {
		select {
		case err := <-cloned:
			cloned <- err
			t.Fatalf("the clone was over (%v) before a refresh of its pool was refused: the test did not hold the pool's job", err)
		default:
		}
		err := probe.l.StoragePoolRefresh(p, 0)
		running = refreshRefused(err)
		if err != nil && !running {
			t.Fatalf("refresh: %v", err)
		}
	}
	if !running {
		t.Fatal("no refresh was refused within a minute of the clone's start")
	}

	if err := os.WriteFile(filepath.Join(dir, "copied.img"), []byte("copied while the clone ran"), 0o644); err != nil {
		t.Fatal(err)
	}
	info, err := b.LookupVolume(ctx, name, "copied.img")
	if err != nil || info.Name != "copied.img" {
		t.Errorf("lookup of copied.img copied in while the clone ran: %+v, %v; want volume copied.img", info, err)
	}
}

// mustCreate creates an empty file and returns its path.
func mustCreate(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}
