package fake

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

func TestStatVolume(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		vol     *Volume
		failOn  bool
		want    backend.VolumeStat
		wantErr error // errors.Is; nil with failOn: any error
	}{
		"a volume EnsureVolume made":  {vol: &Volume{SizeMiB: 8}, want: backend.VolumeStat{Format: "qcow2", CapacityBytes: 8 << 20}},
		"an overlay with data":        {vol: &Volume{SizeMiB: 1, Backing: "/img", Data: "0123456789"}, want: backend.VolumeStat{Format: "qcow2", CapacityBytes: 1 << 20, Bytes: 10}},
		"a seed":                      {vol: &Volume{Data: "#cloud-config"}, want: backend.VolumeStat{Format: "raw", CapacityBytes: 13, Bytes: 13}},
		"a format set":                {vol: &Volume{SizeMiB: 2, Format: "raw", Data: "ab"}, want: backend.VolumeStat{Format: "raw", CapacityBytes: 2 << 20, Bytes: 2}},
		"no such volume":              {wantErr: backend.ErrNotFound},
		"FailOn fails it":             {vol: &Volume{SizeMiB: 8}, failOn: true},
		"FailOn fails a missing one":  {failOn: true},
		"an empty volume is raw, 0 B": {vol: &Volume{}, want: backend.VolumeStat{Format: "raw"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := New()
			if tc.vol != nil {
				b.Volumes["p/v"] = tc.vol
			}
			if tc.failOn {
				b.FailOn["stat-volume v"] = errors.New("boom")
			}
			got, err := b.StatVolume(context.Background(), "p", "v")
			switch {
			case tc.failOn || tc.wantErr != nil:
				if err == nil || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) {
					t.Fatalf("err %v; want %v", err, tc.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("stat (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"stat-volume v"}, b.Log); diff != "" {
				t.Errorf("log (-want +got):\n%s", diff)
			}
		})
	}
}

// copyVia copies pool p's volume name from src to dst as a cold move does: dst's upload fed by
// src's download through a pipe.
func copyVia(ctx context.Context, src, dst *Backend, name string) error {
	st, err := src.StatVolume(ctx, "p", name)
	if err != nil {
		return err
	}
	pr, pw := io.Pipe()
	down := make(chan error, 1)
	go func() {
		_, err := src.DownloadVolume(ctx, "p", name, pw)
		pw.CloseWithError(err)
		down <- err
	}()
	err = dst.UploadVolume(ctx, backend.VolumeUpload{Pool: "p", Name: name, Format: st.Format, CapacityBytes: st.CapacityBytes, Bytes: st.Bytes}, pr)
	pr.CloseWithError(errors.New("the upload ended"))
	return errors.Join(err, <-down)
}

// TestCopyVolume copies volumes between two fakes, and within one (the download writes outside
// the lock the upload takes): the copy's Volume and stat are the source's, backing aside (it is
// in a real qcow2's bytes, not in the upload's spec).
func TestCopyVolume(t *testing.T) {
	t.Parallel()
	cases := map[string]*Volume{
		"a data disk":          {SizeMiB: 8, Data: "the member's bytes"},
		"an empty qcow2":       {SizeMiB: 8},
		"a seed":               {Data: "#cloud-config\n"},
		"a seed of whole MiBs": {Data: strings.Repeat("x", 1<<20)},
		"an NVRAM":             {Data: NVRAMTemplate},
		"a raw volume":         {SizeMiB: 1, Format: "raw", Data: "raw bytes"},
	}
	for name, vol := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			src, dst := New(), New()
			src.Volumes["p/v"] = vol
			if err := copyVia(ctx, src, dst, "v"); err != nil {
				t.Fatal(err)
			}
			want, _ := src.StatVolume(ctx, "p", "v")
			got, err := dst.StatVolume(ctx, "p", "v")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("stat of the copy (-source +copy):\n%s", diff)
			}
			if dst.Volumes["p/v"].Data != vol.Data {
				t.Errorf("the copy holds %q; want %q", dst.Volumes["p/v"].Data, vol.Data)
			}
			if diff := cmp.Diff([]string{"upload-volume v", "stat-volume v"}, dst.Log); diff != "" {
				t.Errorf("destination log (-want +got):\n%s", diff)
			}
			if src.Calls["download-volume"] != 1 {
				t.Errorf("source calls %v; want one download", src.Calls)
			}

			// Within one fake, to another name.
			same := New()
			same.Volumes["p/v"] = vol
			st, _ := same.StatVolume(ctx, "p", "v")
			pr, pw := io.Pipe()
			go func() {
				_, err := same.DownloadVolume(ctx, "p", "v", pw)
				pw.CloseWithError(err)
			}()
			if err := same.UploadVolume(ctx, backend.VolumeUpload{Pool: "p", Name: "w", Format: st.Format, CapacityBytes: st.CapacityBytes, Bytes: st.Bytes}, pr); err != nil {
				t.Fatal(err)
			}
			if same.Volumes["p/w"].Data != vol.Data {
				t.Errorf("the copy within one fake holds %q", same.Volumes["p/w"].Data)
			}
		})
	}
}

// errReader gives its data, then fails.
type errReader struct{ data string }

func (r *errReader) Read(p []byte) (int, error) {
	if r.data == "" {
		return 0, errors.New("the source host went away")
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestUploadVolume(t *testing.T) {
	t.Parallel()
	const content = "0123456789"
	cases := map[string]struct {
		existing *Volume
		failOn   bool
		reader   io.Reader
		cancel   bool
		want     *Volume // nil: no volume after
		wantErr  string  // in the error; "" for none
		isErr    error   // errors.Is
	}{
		"made with its content": {reader: strings.NewReader(content), want: &Volume{Format: "qcow2", SizeMiB: 1, Data: content}},
		"only spec.Bytes are read": {
			reader: strings.NewReader(content + "more"), want: &Volume{Format: "qcow2", SizeMiB: 1, Data: content},
		},
		"the name is taken": {
			existing: &Volume{SizeMiB: 4, Data: "theirs"}, reader: strings.NewReader(content),
			want: &Volume{SizeMiB: 4, Data: "theirs"}, wantErr: "a volume of that name is there already", isErr: backend.ErrExists,
		},
		"the content fails half-way": {reader: &errReader{data: content[:5]}, wantErr: "reading the content failed after 5 of its 10 bytes: the source host went away"},
		"the content ends short":     {reader: strings.NewReader(content[:5]), wantErr: "the content ended after 5 of its 10 bytes"},
		"the context ends":           {reader: strings.NewReader(content), cancel: true, wantErr: "context canceled", isErr: context.Canceled},
		"FailOn fails it":            {failOn: true, reader: strings.NewReader(content), wantErr: "boom"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := New()
			if tc.existing != nil {
				b.Volumes["p/v"] = tc.existing
			}
			if tc.failOn {
				b.FailOn["upload-volume v"] = errors.New("boom")
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel {
				cancel()
			}
			err := b.UploadVolume(ctx, backend.VolumeUpload{Pool: "p", Name: "v", Format: "qcow2", CapacityBytes: 1 << 20, Bytes: uint64(len(content))}, tc.reader)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatal(err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("err %v; want one saying %q", err, tc.wantErr)
			case tc.isErr != nil && !errors.Is(err, tc.isErr):
				t.Fatalf("err %v; want %v", err, tc.isErr)
			}
			if diff := cmp.Diff(tc.want, b.Volumes["p/v"]); diff != "" {
				t.Errorf("volume after (-want +got):\n%s", diff)
			}
		})
	}
}

// failWriter fails every write.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("the destination host went away") }

func TestDownloadVolume(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		missing bool
		failOn  bool
		cancel  bool
		w       io.Writer
		want    string // written
		wantErr string
		isErr   error
	}{
		"its Data":         {want: "the bytes"},
		"no such volume":   {missing: true, wantErr: "not found", isErr: backend.ErrNotFound},
		"FailOn fails it":  {failOn: true, wantErr: "boom"},
		"the writer fails": {w: failWriter{}, wantErr: "the destination host went away"},
		"the context ends": {cancel: true, wantErr: "context canceled", isErr: context.Canceled},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := New()
			if !tc.missing {
				b.Volumes["p/v"] = &Volume{SizeMiB: 1, Data: "the bytes"}
			}
			if tc.failOn {
				b.FailOn["download-volume v"] = errors.New("boom")
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel {
				cancel()
			}
			var buf strings.Builder
			w := tc.w
			if w == nil {
				w = &buf
			}
			n, err := b.DownloadVolume(ctx, "p", "v", w)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatal(err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("err %v; want one saying %q", err, tc.wantErr)
			case tc.isErr != nil && !errors.Is(err, tc.isErr):
				t.Fatalf("err %v; want %v", err, tc.isErr)
			}
			if buf.String() != tc.want || n != int64(len(tc.want)) {
				t.Errorf("wrote %q, said %d bytes; want %q", buf.String(), n, tc.want)
			}
		})
	}
}

func TestHostUUID(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		set    string
		failOn bool
		want   string
	}{
		"unset is fake":   {want: "fake"},
		"set":             {set: "h2.example", want: "h2.example"},
		"FailOn fails it": {failOn: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := New()
			b.HostID = tc.set
			if tc.failOn {
				b.FailOn["host-uuid "] = errors.New("boom")
			}
			got, err := b.HostUUID(context.Background())
			if (err != nil) != tc.failOn || got != tc.want {
				t.Errorf("Hostname %q, %v; want %q (error %t)", got, err, tc.want, tc.failOn)
			}
			if b.Calls["host-uuid"] != 1 {
				t.Errorf("calls %v", b.Calls)
			}
		})
	}
}

// migrationHosts are a source fake running db-1 (a data disk with bytes, a boot overlay, a seed
// and an NVRAM) and the peer it migrates to at "qemu+tcp://peer/system", with the empty volumes
// of the same names a caller makes there beforehand (a copy of the seed: it is not migrated).
func migrationHosts() (src, peer *Backend) {
	src, peer = New(), New()
	src.HostID, peer.HostID = "a", "b"
	src.Peers = map[string]*Backend{"qemu+tcp://peer/system": peer}
	src.Volumes["p/db-1-boot.qcow2"] = &Volume{SizeMiB: 8, Backing: "/img", Data: "boot bytes"}
	src.Volumes["p/db-1-data.qcow2"] = &Volume{SizeMiB: 8, Data: "data bytes"}
	src.Volumes["p/db-1-seed.iso"] = &Volume{Data: "seed"}
	src.Volumes["p/db-1-nvram.fd"] = &Volume{Data: "vars"}
	spec := backend.DomainSpec{
		Name: "db-1", Shape: engine.Shape{DomainType: "qemu", VCPU: 1, MemoryMiB: 64}, MACs: []string{"52:54:00:00:00:01"},
		Disks: []backend.Disk{{DeviceName: "boot", Pool: "p", Volume: "db-1-boot.qcow2"}, {DeviceName: "vdb", Pool: "p", Volume: "db-1-data.qcow2"}},
		Seed:  &backend.Disk{Pool: "p", Volume: "db-1-seed.iso"}, NVRAM: &backend.Disk{Pool: "p", Volume: "db-1-nvram.fd"},
		Record: backend.Record{Group: "db", Index: 1}, Autostart: true,
	}
	ctx := context.Background()
	if err := src.DefineDomain(ctx, spec); err != nil {
		panic(err)
	}
	if err := src.StartDomain(ctx, "db-1"); err != nil {
		panic(err)
	}
	peer.Volumes["p/db-1-boot.qcow2"] = &Volume{SizeMiB: 8}
	peer.Volumes["p/db-1-data.qcow2"] = &Volume{SizeMiB: 8}
	peer.Volumes["p/db-1-seed.iso"] = &Volume{Data: "seed"}
	src.Log, peer.Log = nil, nil
	return src, peer
}

func TestMigrateLive(t *testing.T) {
	t.Parallel()
	const dest = "qemu+tcp://peer/system"
	cases := map[string]struct {
		prepare func(src, peer *Backend)
		uri     string
		timeout time.Duration
		wantErr string // "" for a migration that succeeds
		// clock is how far the source's clock moved.
		clock time.Duration
	}{
		"moves to the peer": {},
		"no timeout is no bound": {
			prepare: func(src, _ *Backend) { src.MigrateDuration = time.Hour },
		},
		"a migration within its timeout": {
			prepare: func(src, _ *Backend) { src.MigrateDuration = time.Minute },
			timeout: 2 * time.Minute,
		},
		"a migration that outlives its timeout is aborted": {
			prepare: func(src, _ *Backend) { src.MigrateDuration = time.Hour },
			timeout: 2 * time.Minute, clock: 2 * time.Minute,
			wantErr: "aborted when its time (2m0s) ran out: operation aborted: migration out: canceled by client",
		},
		"a stopped domain": {
			prepare: func(src, _ *Backend) { src.Domains["db-1"].ID = -1 },
			wantErr: "domain is not running",
		},
		"a URI of no peer": {uri: "qemu+tcp://elsewhere/system", wantErr: "unable to connect to server at 'qemu+tcp://elsewhere/system'"},
		"the name is taken on the peer": {
			prepare: func(_, peer *Backend) { peer.AddUnmanaged(backend.DomainSpec{Name: "db-1"}) },
			wantErr: "domain 'db-1' already exists",
		},
		"a volume missing on the peer": {
			prepare: func(_, peer *Backend) { delete(peer.Volumes, "p/db-1-data.qcow2") },
			wantErr: "cannot access storage file '/fake/p/db-1-data.qcow2'",
		},
		"the seed missing on the peer": {
			prepare: func(_, peer *Backend) { delete(peer.Volumes, "p/db-1-seed.iso") },
			wantErr: "cannot access storage file '/fake/p/db-1-seed.iso'",
		},
		"FailOn fails it on the source": {
			prepare: func(src, _ *Backend) { src.FailOn["migrate db-1"] = errors.New("boom") },
			wantErr: "boom",
		},
		"FailOn fails it on the peer": {
			prepare: func(_, peer *Backend) { peer.FailOn["migrate-in db-1"] = errors.New("the peer refuses") },
			wantErr: "the peer refuses",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			src, peer := migrationHosts()
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			src.Clock = NewClock(start)
			if tc.prepare != nil {
				tc.prepare(src, peer)
			}
			before, _ := src.DomainNow("db-1")
			peerVolumes := map[string]Volume{}
			for k, v := range peer.Volumes {
				peerVolumes[k] = *v
			}
			uri := dest
			if tc.uri != "" {
				uri = tc.uri
			}
			err := src.MigrateLive(context.Background(), "db-1", backend.Migration{DestURI: uri, Timeout: tc.timeout})
			if got := src.Clock.Now().Sub(start); got != tc.clock {
				t.Errorf("the clock moved %s; want %s", got, tc.clock)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, backend.ErrNotMigrated) {
					t.Fatalf("err %v; want one saying %q, and that nothing was migrated", err, tc.wantErr)
				}
				// Nothing moved: the domain runs on here as it was, the peer's volumes as they were.
				after, ok := src.DomainNow("db-1")
				if diff := cmp.Diff(before, after); !ok || diff != "" {
					t.Errorf("the source's domain changed (-before +after):\n%s", diff)
				}
				if d, ok := peer.DomainNow("db-1"); ok && !d.Unmanaged {
					t.Errorf("the peer has the domain: %+v", d)
				}
				for k, v := range peerVolumes {
					if got, _ := peer.VolumeNow("p", strings.TrimPrefix(k, "p/")); got != v {
						t.Errorf("the peer's %s changed: %+v, was %+v", k, got, v)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := src.DomainNow("db-1"); ok {
				t.Error("the domain is still defined on the source")
			}
			got, ok := peer.DomainNow("db-1")
			if !ok {
				t.Fatal("the domain is not on the peer")
			}
			want := Domain{Spec: before.Spec, UUID: before.UUID, ID: got.ID}
			if diff := cmp.Diff(want, got); diff != "" || got.ID < 0 {
				t.Errorf("the domain on the peer (-want +got), running %t:\n%s", got.ID > 0, diff)
			}
			wantVolumes := map[string]Volume{
				"p/db-1-boot.qcow2": {SizeMiB: 8, Data: "boot bytes"},
				"p/db-1-data.qcow2": {SizeMiB: 8, Data: "data bytes"},
				"p/db-1-seed.iso":   {Data: "seed"},
				"p/db-1-nvram.fd":   {Data: NVRAMTemplate}, // libvirt makes a missing NVRAM from the template
			}
			gotVolumes := map[string]Volume{}
			for k, v := range peer.Volumes {
				gotVolumes[k] = *v
			}
			if diff := cmp.Diff(wantVolumes, gotVolumes); diff != "" {
				t.Errorf("the peer's volumes (-want +got):\n%s", diff)
			}
			if len(src.Volumes) != 4 {
				t.Errorf("the source's volumes: %v; want the four left as they were", src.VolumeNames("p"))
			}
			if diff := cmp.Diff([]string{"migrate db-1"}, src.Log); diff != "" {
				t.Errorf("source log (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"migrate-in db-1"}, peer.Log); diff != "" {
				t.Errorf("peer log (-want +got):\n%s", diff)
			}
		})
	}
}
