package libvirt

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	"libvirt.org/go/libvirtxml"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
)

// A group record is kept as one small raw volume per generation, "<group>.virt-group.<n>", in
// the group's pool. A generation is published by cloning a fully written staging volume under
// its final name: libvirt refuses a duplicate volume name, so exactly one writer wins each
// generation (a compare-and-swap with no extra daemon), and a volume libvirt is still building
// cannot be downloaded, so a reader never sees half of one. Each generation carries a SHA-256 of
// its body, so a volume torn by a crash of libvirtd itself is recognised and skipped. Read one
// with `virsh vol-download --pool <pool> <group>.virt-group.<n> /dev/stdout`.
const (
	recordInfix   = ".virt-group."
	stagingPrefix = "staging-"
	recordFormat  = "virt-group-record/1"
	// keptGenerations is how many older generations stay behind the newest, for people who want
	// to see what changed.
	keptGenerations = 4
)

type recordEnvelope struct {
	Format     string          `json:"format"`
	Group      string          `json:"group"`
	Generation int64           `json:"generation"`
	SHA256     string          `json:"sha256"`
	Body       json.RawMessage `json:"body"`
}

func recordVolumeName(group string, generation int64) string {
	return fmt.Sprintf("%s%s%010d", group, recordInfix, generation)
}

// recordGeneration parses a generation volume's name; staging volumes and others do not parse.
func recordGeneration(group, name string) (int64, bool) {
	rest, ok := strings.CutPrefix(name, group+recordInfix)
	if !ok || strings.HasPrefix(rest, stagingPrefix) {
		return 0, false
	}
	n, err := strconv.ParseInt(rest, 10, 64)
	return n, err == nil && n > 0
}

type generationVolume struct {
	pool golibvirt.StoragePool
	vol  golibvirt.StorageVol
	gen  int64
}

// generations lists the group's record generations in every active pool, newest first.
func (b *Backend) generations(group string) ([]generationVolume, error) {
	pools, _, err := b.l.ConnectListAllStoragePools(1, golibvirt.ConnectListStoragePoolsActive)
	if err != nil {
		return nil, wrap("list storage pools", b.uri, err)
	}
	var out []generationVolume
	for _, p := range pools {
		vols, _, err := b.l.StoragePoolListAllVolumes(p, 1, 0)
		if isNotFoundLibvirt(err) {
			continue
		}
		if err != nil {
			return nil, wrap("list volumes of pool", p.Name, err)
		}
		for _, v := range vols {
			if gen, ok := recordGeneration(group, v.Name); ok {
				out = append(out, generationVolume{pool: p, vol: v, gen: gen})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].gen > out[j].gen })
	return out, nil
}

// errBuilding marks a generation libvirt is still writing.
var errBuilding = errors.New("the newest generation is still being written")

func (b *Backend) download(v golibvirt.StorageVol) ([]byte, error) {
	var buf bytes.Buffer
	if err := b.l.StorageVolDownload(v, &buf, 0, 0, 0); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func decodeEnvelope(group string, gen int64, raw []byte) ([]byte, bool) {
	var env recordEnvelope
	if json.Unmarshal(raw, &env) != nil || env.Format != recordFormat || env.Group != group || env.Generation != gen {
		return nil, false
	}
	sum := sha256.Sum256(env.Body)
	return env.Body, hex.EncodeToString(sum[:]) == env.SHA256
}

// ReadGroupRecord returns the newest complete generation. While the newest one is still being
// built the read is retried by the caller (ErrConflict), because answering with the one before
// would let that caller overwrite the change being published.
func (b *Backend) ReadGroupRecord(ctx context.Context, group string) (backend.GroupRecord, error) {
	gens, err := b.generations(group)
	if err != nil {
		return backend.GroupRecord{}, err
	}
	if len(gens) == 0 {
		return backend.GroupRecord{}, fmt.Errorf("group record of %s: %w", group, backend.ErrNotFound)
	}
	newest := gens[0].gen
	for i, g := range gens {
		raw, err := b.download(g.vol)
		if err != nil {
			if i == 0 && isCode(err, golibvirt.ErrOperationInvalid) {
				return backend.GroupRecord{}, fmt.Errorf("read group record %s: %w: %w", g.vol.Name, errBuilding, backend.ErrConflict)
			}
			if isNotFoundLibvirt(err) {
				continue
			}
			return backend.GroupRecord{}, wrap("read group record", g.pool.Name+"/"+g.vol.Name, err)
		}
		body, ok := decodeEnvelope(group, g.gen, raw)
		if !ok {
			tflog.SubsystemWarn(ctx, Subsystem, "skipped a torn group record generation", map[string]any{"volume": g.vol.Name})
			continue
		}
		return backend.GroupRecord{Pool: g.pool.Name, Generation: newest, Data: body}, nil
	}
	return backend.GroupRecord{}, fmt.Errorf("group record of %s: no complete generation among %d: %w", group, len(gens), backend.ErrNotFound)
}

func randomSuffix() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func rawVolumeXML(name string, size uint64) (string, error) {
	v := libvirtxml.StorageVolume{
		Name:     name,
		Capacity: &libvirtxml.StorageVolumeSize{Unit: "bytes", Value: size},
		Target:   &libvirtxml.StorageVolumeTarget{Format: &libvirtxml.StorageVolumeTargetFormat{Type: "raw"}},
	}
	return v.Marshal()
}

// WriteGroupRecord writes the body to a staging volume, then publishes it by cloning the staging
// volume under the generation's name.
func (b *Backend) WriteGroupRecord(ctx context.Context, group string, rec backend.GroupRecord) error {
	sum := sha256.Sum256(rec.Data)
	env, err := json.MarshalIndent(recordEnvelope{Format: recordFormat, Group: group, Generation: rec.Generation,
		SHA256: hex.EncodeToString(sum[:]), Body: rec.Data}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode group record of %s: %w", group, err)
	}
	env = append(env, '\n')
	p, err := b.pool(rec.Pool)
	if err != nil {
		return err
	}
	stagingName := group + recordInfix + stagingPrefix + randomSuffix()
	doc, err := rawVolumeXML(stagingName, uint64(len(env)))
	if err != nil {
		return err
	}
	staging, err := b.l.StorageVolCreateXML(p, doc, 0)
	if err != nil {
		return wrap("create group record staging volume", rec.Pool+"/"+stagingName, err)
	}
	defer func() { _ = b.l.StorageVolDelete(staging, 0) }()
	if err := b.l.StorageVolUpload(staging, bytes.NewReader(env), 0, uint64(len(env)), 0); err != nil {
		return wrap("write group record staging volume", rec.Pool+"/"+stagingName, err)
	}
	name := recordVolumeName(group, rec.Generation)
	doc, err = rawVolumeXML(name, uint64(len(env)))
	if err != nil {
		return err
	}
	if _, err := b.l.StorageVolCreateXMLFrom(p, doc, staging, 0); err != nil {
		if isCode(err, golibvirt.ErrStorageVolExist) {
			return fmt.Errorf("write group record %s/%s: %w", rec.Pool, name, backend.ErrConflict)
		}
		return wrap("publish group record", rec.Pool+"/"+name, err)
	}
	tflog.SubsystemDebug(ctx, Subsystem, "wrote group record", map[string]any{"group": group, "pool": rec.Pool, "generation": rec.Generation})
	b.pruneGenerations(ctx, group, rec.Generation)
	return nil
}

// pruneGenerations deletes generations well behind the newest. Failing to prune loses nothing.
func (b *Backend) pruneGenerations(ctx context.Context, group string, newest int64) {
	gens, err := b.generations(group)
	if err != nil {
		return
	}
	for _, g := range gens {
		if g.gen <= newest-keptGenerations {
			if err := b.l.StorageVolDelete(g.vol, 0); err != nil && !isNotFoundLibvirt(err) {
				tflog.SubsystemWarn(ctx, Subsystem, "cannot prune a group record generation", map[string]any{"volume": g.vol.Name, "error": err.Error()})
			}
		}
	}
}

// DeleteGroupRecord deletes every generation and staging volume of the group's record.
func (b *Backend) DeleteGroupRecord(ctx context.Context, pool, group string) error {
	p, err := b.pool(pool)
	if err != nil {
		return err
	}
	vols, _, err := b.l.StoragePoolListAllVolumes(p, 1, 0)
	if err != nil {
		return wrap("list volumes of pool", pool, err)
	}
	for _, v := range vols {
		if !strings.HasPrefix(v.Name, group+recordInfix) {
			continue
		}
		if err := b.l.StorageVolDelete(v, 0); err != nil && !isNotFoundLibvirt(err) {
			return wrap("delete group record", pool+"/"+v.Name, err)
		}
	}
	tflog.SubsystemDebug(ctx, Subsystem, "deleted group record", map[string]any{"group": group, "pool": pool})
	return nil
}
