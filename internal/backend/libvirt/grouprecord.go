package libvirt

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	"libvirt.org/go/libvirtxml"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// A group record is kept as one libvirt secret per generation. The secret carries no value:
// its description holds the record, and its usage ID, "virt-group:<group>:<generation>", names
// the generation. libvirt defines a secret in one step and refuses a second secret with the same
// usage ID, so exactly one writer wins each generation (a compare-and-swap with no extra daemon)
// and a reader sees a generation whole or not at all. Each generation also carries a SHA-256 of
// its body, so one damaged on disk is recognised and skipped. Read them with
// `virsh secret-list` and `virsh secret-dumpxml <uuid>`.
//
// Secrets were chosen over volumes in the pool because reading a volume needs a libvirt stream,
// and go-libvirt's stream handling can deadlock the whole connection when libvirtd sends a
// packet after the stream has ended.
const (
	recordUsagePrefix = "virt-group:"
	recordFormat      = "virt-group-record/1"
	// keptGenerations is how many generations, the newest included, stay on the host, for people
	// who want to see what changed.
	keptGenerations = 4
)

type recordEnvelope struct {
	Format     string          `json:"format"`
	Group      string          `json:"group"`
	Generation int64           `json:"generation"`
	Pool       string          `json:"pool"`
	SHA256     string          `json:"sha256"`
	Body       json.RawMessage `json:"body"`
}

func recordUsageID(group string, generation int64) string {
	return fmt.Sprintf("%s%s:%010d", recordUsagePrefix, group, generation)
}

// recordGeneration parses a generation's usage ID; secrets of other groups or uses do not parse.
func recordGeneration(group, usageID string) (int64, bool) {
	rest, ok := strings.CutPrefix(usageID, recordUsagePrefix+group+":")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(rest, 10, 64)
	return n, err == nil && n > 0
}

type generationSecret struct {
	secret golibvirt.Secret
	gen    int64
}

func (c conn) recordSecrets() ([]golibvirt.Secret, error) {
	secrets, _, err := c.l.ConnectListAllSecrets(1, 0)
	if err != nil {
		return nil, wrap("list secrets", c.uri, err)
	}
	return secrets, nil
}

// generations lists the group's record generations, newest first.
func (c conn) generations(group string) ([]generationSecret, error) {
	secrets, err := c.recordSecrets()
	if err != nil {
		return nil, err
	}
	var out []generationSecret
	for _, s := range secrets {
		if s.UsageType != int32(golibvirt.SecretUsageTypeVolume) {
			continue
		}
		if gen, ok := recordGeneration(group, s.UsageID); ok {
			out = append(out, generationSecret{secret: s, gen: gen})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].gen > out[j].gen })
	return out, nil
}

// GroupRecordNames lists the groups whose names start with prefix and that have a record on
// this host, so that tests can sweep and check what they leave behind.
func (b *Backend) GroupRecordNames(prefix string) ([]string, error) {
	var secrets []golibvirt.Secret
	err := b.do(context.Background(), "list group records", "", func(c conn) error {
		var err error
		secrets, err = c.recordSecrets()
		return err
	})
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for _, s := range secrets {
		rest, ok := strings.CutPrefix(s.UsageID, recordUsagePrefix)
		if !ok {
			continue
		}
		i := strings.LastIndexByte(rest, ':')
		if i < 0 {
			continue
		}
		if group := rest[:i]; strings.HasPrefix(group, prefix) && !seen[group] {
			seen[group] = true
			out = append(out, group)
		}
	}
	sort.Strings(out)
	return out, nil
}

// ListGroups lists the groups that have a record on this host.
// A kept record (engine.KeptRecordName, a name no group may have) is not a group's.
func (b *Backend) ListGroups(context.Context) ([]string, error) {
	names, err := b.GroupRecordNames("")
	return slices.DeleteFunc(names, engine.IsKeptRecordName), err
}

func decodeEnvelope(group string, gen int64, doc string) (recordEnvelope, bool) {
	var s libvirtxml.Secret
	if s.Unmarshal(doc) != nil {
		return recordEnvelope{}, false
	}
	var env recordEnvelope
	if json.Unmarshal([]byte(s.Description), &env) != nil || env.Format != recordFormat || env.Group != group || env.Generation != gen {
		return recordEnvelope{}, false
	}
	return env, checksum(env.Body) == env.SHA256
}

// checksum is the SHA-256 of the body's compact form, so that the indentation the envelope
// adds for people reading it does not change it.
func checksum(body []byte) string {
	var b bytes.Buffer
	if json.Compact(&b, body) != nil {
		return ""
	}
	sum := sha256.Sum256(b.Bytes())
	return hex.EncodeToString(sum[:])
}

// ReadGroupRecord returns the newest intact generation. It only reads, so reading again after a
// reconnect is safe.
func (b *Backend) ReadGroupRecord(ctx context.Context, group string) (backend.GroupRecord, error) {
	var rec backend.GroupRecord
	err := b.do(ctx, "read group record", group, func(c conn) error {
		var err error
		rec, err = c.readGroupRecord(ctx, group)
		return err
	})
	return rec, err
}

func (c conn) readGroupRecord(ctx context.Context, group string) (backend.GroupRecord, error) {
	gens, err := c.generations(group)
	if err != nil {
		return backend.GroupRecord{}, err
	}
	if len(gens) == 0 {
		return backend.GroupRecord{}, fmt.Errorf("group record of %s: %w", group, backend.ErrNotFound)
	}
	newest := gens[0].gen
	for i, g := range gens {
		doc, err := c.l.SecretGetXMLDesc(g.secret, 0)
		if isCode(err, golibvirt.ErrNoSecret) {
			if i == 0 {
				// The newest generation went between the listing and now (the whole record is
				// being deleted): answering with an older one would let a writer build on it.
				return backend.GroupRecord{}, fmt.Errorf("read group record %s: generation %d vanished while being read: %w", group, g.gen, backend.ErrConflict)
			}
			// An older one pruned by a writer meanwhile.
			continue
		}
		if err != nil {
			return backend.GroupRecord{}, wrap("read group record", g.secret.UsageID, err)
		}
		env, ok := decodeEnvelope(group, g.gen, doc)
		if !ok {
			tflog.SubsystemWarn(ctx, Subsystem, "skipped a damaged group record generation", map[string]any{"usage": g.secret.UsageID})
			continue
		}
		return backend.GroupRecord{Pool: env.Pool, Generation: newest, Data: env.Body}, nil
	}
	return backend.GroupRecord{}, fmt.Errorf("group record of %s: no intact generation among %d: %w", group, len(gens), backend.ErrNotFound)
}

// randomUUID is a random (version 4) UUID, as libvirt writes them.
func randomUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// WriteGroupRecord defines generation rec.Generation. A fresh UUID makes sure a define can only
// ever add a secret, never replace another writer's. The UUID is chosen once per call, so that
// defining again after a lost connection redefines this writer's own secret, if the first
// attempt made it, rather than taking it for another writer's and answering ErrConflict.
func (b *Backend) WriteGroupRecord(ctx context.Context, group string, rec backend.GroupRecord) error {
	sum := checksum(rec.Data)
	if sum == "" {
		return fmt.Errorf("encode group record of %s: the body is not JSON", group)
	}
	env, err := json.MarshalIndent(recordEnvelope{Format: recordFormat, Group: group, Generation: rec.Generation,
		Pool: rec.Pool, SHA256: sum, Body: rec.Data}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode group record of %s: %w", group, err)
	}
	usage := recordUsageID(group, rec.Generation)
	doc, err := (&libvirtxml.Secret{
		Ephemeral:   "no",
		Private:     "no",
		Description: string(env),
		UUID:        randomUUID(),
		Usage:       &libvirtxml.SecretUsage{Type: "volume", Volume: usage},
	}).Marshal()
	if err != nil {
		return fmt.Errorf("encode group record of %s: %w", group, err)
	}
	err = b.do(ctx, "write group record", usage, func(c conn) error {
		if _, err := c.l.SecretDefineXML(doc, 0); err != nil {
			// libvirt reports a taken usage ID as an internal error, so the lookup decides.
			if _, lerr := c.l.SecretLookupByUsage(int32(golibvirt.SecretUsageTypeVolume), usage); lerr == nil {
				return fmt.Errorf("write group record %s: generation %d was written by another writer: %w", group, rec.Generation, backend.ErrConflict)
			}
			return wrap("write group record", usage, err)
		}
		c.pruneGenerations(ctx, group, rec.Generation)
		return nil
	})
	if err != nil {
		return err
	}
	tflog.SubsystemDebug(ctx, Subsystem, "wrote group record", map[string]any{"group": group, "pool": rec.Pool, "generation": rec.Generation})
	return nil
}

// pruneGenerations deletes generations well behind the newest. Failing to prune loses nothing.
func (c conn) pruneGenerations(ctx context.Context, group string, newest int64) {
	gens, err := c.generations(group)
	if err != nil {
		return
	}
	for _, g := range gens {
		if g.gen <= newest-keptGenerations {
			if err := c.l.SecretUndefine(g.secret); err != nil && !isCode(err, golibvirt.ErrNoSecret) {
				tflog.SubsystemWarn(ctx, Subsystem, "cannot prune a group record generation", map[string]any{"usage": g.secret.UsageID, "error": err.Error()})
			}
		}
	}
}

// DeleteGroupRecord deletes every generation of the group's record. The pool is not needed
// here; it is part of the signature for backends that keep records in the pool. A generation
// already gone is not an error, so deleting again after a lost connection is safe.
func (b *Backend) DeleteGroupRecord(ctx context.Context, _ string, group string) error {
	var n int
	err := b.do(ctx, "delete group record", group, func(c conn) error {
		gens, err := c.generations(group)
		if err != nil {
			return err
		}
		for _, g := range gens {
			if err := c.l.SecretUndefine(g.secret); err != nil && !isCode(err, golibvirt.ErrNoSecret) {
				return wrap("delete group record", g.secret.UsageID, err)
			}
		}
		n = len(gens)
		return nil
	})
	if err != nil {
		return err
	}
	tflog.SubsystemDebug(ctx, Subsystem, "deleted group record", map[string]any{"group": group, "generations": n})
	return nil
}
