package libvirt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"libvirt.org/go/libvirtxml"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
)

func secretDoc(t *testing.T, description string) string {
	t.Helper()
	doc, err := (&libvirtxml.Secret{Description: description, Usage: &libvirtxml.SecretUsage{Type: "volume", Volume: "x"}}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func envelopeText(t *testing.T, env recordEnvelope) string {
	t.Helper()
	b, err := json.MarshalIndent(env, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDecodeEnvelope checks that a generation is only accepted whole: right format, group and
// generation, and a body whose checksum matches, whatever indentation it was stored with.
func TestDecodeEnvelope(t *testing.T) {
	body := json.RawMessage(`{"group":{"name":"db"},"configs":{"db-1":{"metadata":{"a":"b"}}}}`)
	good := recordEnvelope{Format: recordFormat, Group: "db", Generation: 7, Pool: "p", SHA256: checksum(body), Body: body}
	damaged := good
	damaged.Body = json.RawMessage(`{"group":{"name":"db"},"configs":{}}`)
	otherGroup := good
	otherGroup.Group = "web"
	otherGen := good
	otherGen.Generation = 8
	otherFormat := good
	otherFormat.Format = "virt-group-record/0"
	cases := []struct {
		name string
		doc  string
		ok   bool
	}{
		{"intact", secretDoc(t, envelopeText(t, good)), true},
		{"intact, compact", secretDoc(t, strings.Join(strings.Fields(envelopeText(t, good)), "")), true},
		{"body changed after its checksum", secretDoc(t, envelopeText(t, damaged)), false},
		{"another group's", secretDoc(t, envelopeText(t, otherGroup)), false},
		{"another generation's", secretDoc(t, envelopeText(t, otherGen)), false},
		{"unknown format", secretDoc(t, envelopeText(t, otherFormat)), false},
		{"cut short", secretDoc(t, envelopeText(t, good)[:40]), false},
		{"not a secret", "<volume/>", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env, ok := decodeEnvelope("db", 7, c.doc)
			if ok != c.ok {
				t.Fatalf("decodeEnvelope ok = %v, want %v", ok, c.ok)
			}
			if ok && (env.Pool != "p" || checksum(env.Body) != checksum(body)) {
				t.Fatalf("decoded %+v", env)
			}
		})
	}
}

func TestRecordGeneration(t *testing.T) {
	cases := []struct {
		usage string
		gen   int64
		ok    bool
	}{
		{recordUsageID("db", 12), 12, true},
		{recordUsageID("db-2", 12), 0, false},
		{"virt-group:db:abc", 0, false},
		{"virt-group:db:0000000000", 0, false},
		{"/var/lib/libvirt/images/db.luks", 0, false},
	}
	for _, c := range cases {
		gen, ok := recordGeneration("db", c.usage)
		if gen != c.gen || ok != c.ok {
			t.Errorf("recordGeneration(db, %q) = %d, %v; want %d, %v", c.usage, gen, ok, c.gen, c.ok)
		}
	}
}

// TestAccGroupRecord_concurrentWriters races two writers with separate libvirt connections for
// each generation of one record: exactly one wins each round, the loser gets ErrConflict, and every
// generation read back is the winner's, whole.
func TestAccGroupRecord_concurrentWriters(t *testing.T) {
	requireAcc(t)
	writers := make([]*Backend, 2)
	for i := range writers {
		// Cleanups run last registered first: the connections close after the record is deleted.
		writers[i] = connectAcc(t, DefaultURI)
	}
	ctx := context.Background()
	group := "tfacc-record-race"
	_ = writers[0].DeleteGroupRecord(ctx, "", group)
	t.Cleanup(func() {
		if err := writers[0].DeleteGroupRecord(ctx, "", group); err != nil {
			t.Errorf("delete record: %v", err)
		}
		if left, _ := writers[0].GroupRecordNames(group); len(left) > 0 {
			t.Errorf("left behind: %v", left)
		}
	})
	const rounds = 20
	for round := int64(1); round <= rounds; round++ {
		errs := make([]error, len(writers))
		var start, done sync.WaitGroup
		start.Add(1)
		for i, w := range writers {
			done.Add(1)
			go func() {
				defer done.Done()
				start.Wait()
				body := fmt.Sprintf(`{"round":%d,"writer":%d}`, round, i)
				errs[i] = w.WriteGroupRecord(ctx, group, backend.GroupRecord{Pool: "p", Generation: round, Data: []byte(body)})
			}()
		}
		start.Done()
		done.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("round %d: writers %d and %d both won", round, winner, i)
			case err == nil:
				winner = i
			case !errors.Is(err, backend.ErrConflict):
				t.Fatalf("round %d: writer %d failed with %v, want ErrConflict", round, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: nobody won: %v", round, errs)
		}
		// Each writer reads with its own connection and must see the winner's generation.
		for i, w := range writers {
			rec, err := w.ReadGroupRecord(ctx, group)
			if err != nil {
				t.Fatalf("round %d: writer %d cannot read: %v", round, i, err)
			}
			var got struct{ Round, Writer int }
			if err := json.Unmarshal(rec.Data, &got); err != nil {
				t.Fatalf("round %d: record does not decode: %v", round, err)
			}
			if rec.Generation != round || got.Round != int(round) || got.Writer != winner || rec.Pool != "p" {
				gens, _ := rawConn(w).generations(group)
				for _, g := range gens {
					doc, err := w.Raw().SecretGetXMLDesc(g.secret, 0)
					_, ok := decodeEnvelope(group, g.gen, doc)
					t.Logf("generation %d %x: ok=%v err=%v\n%s", g.gen, g.secret.UUID, ok, err, doc)
				}
				t.Fatalf("round %d: writer %d read generation %d %+v, want the round's winner %d", round, i, rec.Generation, got, winner)
			}
		}
	}
	// Older generations are pruned down to the kept ones, each intact.
	gens, err := rawConn(writers[0]).generations(group)
	if err != nil {
		t.Fatal(err)
	}
	if len(gens) != keptGenerations {
		t.Fatalf("%d generations kept, want %d", len(gens), keptGenerations)
	}
	for _, g := range gens {
		doc, err := writers[0].Raw().SecretGetXMLDesc(g.secret, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := decodeEnvelope(group, g.gen, doc); !ok {
			t.Fatalf("generation %d is damaged", g.gen)
		}
	}
}
