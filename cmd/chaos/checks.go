package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/backend/libvirt"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// host is the harness's own connection to libvirt, for inspection and cleanup only: the group
// itself is changed by terraform alone.
type host struct {
	uri, pool string
	mu        sync.Mutex
	b         *libvirt.Backend
}

func connectHost(uri, pool string) (*host, error) {
	b, err := libvirt.Connect(uri)
	if err != nil {
		return nil, err
	}
	return &host{uri: uri, pool: pool, b: b}, nil
}

func (h *host) conn() *libvirt.Backend {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.b
}

// reconnect opens a fresh connection after libvirtd was restarted, retrying while the new daemon
// comes up, rather than relying on the old connection noticing that it is gone.
func (h *host) reconnect(wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		b, err := libvirt.Connect(h.uri)
		if err == nil {
			h.mu.Lock()
			old := h.b
			h.b = b
			h.mu.Unlock()
			// The old connection's daemon is gone; closing it must not hold the harness up.
			go old.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func (h *host) volumePath(pool, name string) (string, error) {
	ctx, cancel := withTimeout(time.Minute)
	defer cancel()
	vols, err := h.conn().ListVolumes(ctx, pool, name)
	if err != nil {
		return "", err
	}
	for _, v := range vols {
		if v.Name == name {
			return v.Path, nil
		}
	}
	return "", fmt.Errorf("volume %s does not exist in pool %s", name, pool)
}

// sweep deletes every domain, volume of the pool and group record whose name starts with p,
// domains first so that no volume is in use when it goes. It refuses any prefix but the
// harness's own.
func (h *host) sweep(ctx context.Context, p string) ([]string, error) {
	if !strings.HasPrefix(p, prefix) {
		return nil, fmt.Errorf("refusing to sweep %q: only %s… objects are the harness's", p, prefix)
	}
	b := h.conn()
	var removed []string
	var errs []string
	doms, err := b.ListDomains(ctx, p)
	if err != nil {
		errs = append(errs, err.Error())
	}
	for _, d := range doms {
		if err := b.UndefineDomain(ctx, d.Name); err != nil {
			errs = append(errs, err.Error())
			continue
		}
		removed = append(removed, "domain "+d.Name)
	}
	vols, err := b.ListVolumes(ctx, h.pool, p)
	if err != nil {
		errs = append(errs, err.Error())
	}
	for _, v := range vols {
		if err := b.DeleteVolume(ctx, h.pool, v.Name); err != nil {
			errs = append(errs, err.Error())
			continue
		}
		removed = append(removed, "volume "+v.Name)
	}
	groups, err := b.GroupRecordNames(p)
	if err != nil {
		errs = append(errs, err.Error())
	}
	for _, g := range groups {
		if err := b.DeleteGroupRecord(ctx, h.pool, g); err != nil {
			errs = append(errs, err.Error())
			continue
		}
		removed = append(removed, "group record "+g)
	}
	if len(errs) > 0 {
		return removed, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return removed, nil
}

// checkResult is what one inspection of the host found wrong. Each list holds one line per
// object, saying what is wrong with it.
type checkResult struct {
	lost          []string // data volumes whose bytes changed or that are gone
	orphanDomains []string // domains with the group's prefix that are not exactly its members
	orphanVolumes []string // volumes with the group's prefix that no member owns
	doubles       []string // member identities with more than one domain
	misplaced     []string // members on a host the configuration drains, after an apply that succeeded
	corrupt       []string // the group record cannot be read or is not JSON
	staleBoot     []string // boot volumes not backed by the image the configuration names
	staleSeed     []string // cloud-init seeds missing, or not saying the member's name and the configured image
	down          []string // members missing or not running
	notes         []string // expected by design, reported only (a NEVER disk kept on scale-in)
	errs          []string // the inspection itself failed: nothing can be claimed
}

// violations are the findings that fail the run: lost bytes, orphans, doubled identities,
// corrupt records, and inspections that could not be made. Stale boot volumes and members down
// are reported but left to the convergence check, which sees them as a plan that is not empty.
func (r checkResult) violations() []string {
	var out []string
	add := func(kind string, items []string) {
		for _, i := range items {
			out = append(out, kind+": "+i)
		}
	}
	add("bytes lost", r.lost)
	add("orphan domain", r.orphanDomains)
	add("orphan volume", r.orphanVolumes)
	add("identity with two domains", r.doubles)
	add("member on a drained host", r.misplaced)
	add("corrupt group record", r.corrupt)
	add("inspection failed", r.errs)
	return out
}

// reported are the findings shown but not failing the run.
func (r checkResult) reported() []string {
	var out []string
	for _, s := range r.staleBoot {
		out = append(out, "stale boot volume: "+s)
	}
	for _, s := range r.staleSeed {
		out = append(out, "stale seed: "+s)
	}
	for _, s := range r.down {
		out = append(out, "member down: "+s)
	}
	return out
}

func (r checkResult) summary() string {
	var parts []string
	add := func(kind string, items []string) {
		if len(items) > 0 {
			parts = append(parts, fmt.Sprintf("%s %d (%s)", kind, len(items), strings.Join(items, "; ")))
		}
	}
	add("BYTES LOST", r.lost)
	add("ORPHAN DOMAINS", r.orphanDomains)
	add("ORPHAN VOLUMES", r.orphanVolumes)
	add("TWO DOMAINS", r.doubles)
	add("ON A DRAINED HOST", r.misplaced)
	add("CORRUPT RECORD", r.corrupt)
	add("STALE BOOT", r.staleBoot)
	add("STALE SEED", r.staleSeed)
	add("DOWN", r.down)
	add("INSPECTION FAILED", r.errs)
	add("note", r.notes)
	if len(parts) == 0 {
		return "checks ok"
	}
	return "checks: " + strings.Join(parts, ", ")
}

// expectation is what a check compares the host with, beyond the M running members.
type expectation struct {
	members int
	// allowed are volumes with the group's prefix that are there by design, with the reason.
	allowed map[string]string
}

func (c *chaos) checkAll(when string) checkResult {
	return c.check(when, expectation{members: c.o.members})
}

// check inspects the group on the host: its domains, its volumes, the data volumes' bytes, the
// boot volumes' backing image and the group record. A data volume found changed is reported once:
// its new bytes become what later checks compare with, so a kill point only counts its own loss.
func (c *chaos) check(when string, e expectation) checkResult {
	ctx, cancel := withTimeout(3 * time.Minute)
	defer cancel()
	var r checkResult
	b := c.h.conn()
	gp := groupName + "-"

	members := map[string]bool{}
	for i := 1; i <= e.members; i++ {
		members[memberName(i)] = true
	}
	doms, err := b.ListDomains(ctx, gp)
	if err != nil {
		r.errs = append(r.errs, "list domains: "+err.Error())
	}
	byName := map[string]backend.Domain{}
	byIdentity := map[int][]string{}
	for _, d := range doms {
		byName[d.Name] = d
		idx := identity(d)
		if idx > 0 {
			byIdentity[idx] = append(byIdentity[idx], d.Name)
		}
		if !members[d.Name] {
			r.orphanDomains = append(r.orphanDomains, fmt.Sprintf("%s (%s, identity %s)", d.Name, d.Status, identityText(idx)))
		}
	}
	for _, idx := range sortedKeys(byIdentity) {
		if names := byIdentity[idx]; len(names) > 1 {
			sort.Strings(names)
			r.doubles = append(r.doubles, fmt.Sprintf("%s: %s", memberName(idx), strings.Join(names, ", ")))
		}
	}
	for i := 1; i <= e.members; i++ {
		d, ok := byName[memberName(i)]
		switch {
		case err != nil:
		case !ok:
			r.down = append(r.down, memberName(i)+" has no domain")
		case d.Status != engine.StatusRunning:
			r.down = append(r.down, fmt.Sprintf("%s is %s", d.Name, d.Status))
		}
	}

	vols, verr := b.ListVolumes(ctx, c.pool, gp)
	if verr != nil {
		r.errs = append(r.errs, "list volumes: "+verr.Error())
	}
	paths := map[string]string{}
	for _, v := range vols {
		paths[v.Name] = v.Path
		stem := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(v.Name, "-boot.qcow2"), "-data.qcow2"), "-cidata.iso")
		switch {
		case members[stem] && (v.Name == bootVolume(stem) || v.Name == dataVolume(stem) || v.Name == engine.SeedVolumeName(stem)):
		case e.allowed[v.Name] != "":
			r.notes = append(r.notes, v.Name+": "+e.allowed[v.Name])
		default:
			r.orphanVolumes = append(r.orphanVolumes, v.Name)
		}
	}
	if verr == nil {
		for i := 1; i <= e.members; i++ {
			c.checkData(&r, dataVolume(memberName(i)), paths)
			c.checkBoot(&r, bootVolume(memberName(i)), paths)
			c.checkSeed(&r, memberName(i), paths)
		}
	}

	rec, err := b.ReadGroupRecord(ctx, groupName)
	switch {
	case err != nil:
		r.corrupt = append(r.corrupt, "read: "+err.Error())
	case !json.Valid(rec.Data):
		r.corrupt = append(r.corrupt, fmt.Sprintf("generation %d is not valid JSON: %.80q", rec.Generation, rec.Data))
	}
	return r
}

// checkData compares a data volume's bytes with what they must be.
func (c *chaos) checkData(r *checkResult, name string, paths map[string]string) {
	want, known := c.sums[name]
	path, ok := paths[name]
	if !ok {
		if known && want != "" {
			r.lost = append(r.lost, name+" is gone")
			// Counted now; a volume that comes back later is compared with its new bytes.
			c.sums[name] = ""
		}
		return
	}
	sum, _, err := checksum(path, c.scratch)
	if err != nil {
		r.errs = append(r.errs, err.Error())
		return
	}
	switch {
	case !known || want == "":
		c.sums[name] = sum
	case sum != want:
		r.lost = append(r.lost, fmt.Sprintf("%s has checksum %.12s…, had %.12s…", name, sum, want))
		c.sums[name] = sum
	}
}

// checkBoot checks that the boot volume is an overlay of the image the configuration names now.
func (c *chaos) checkBoot(r *checkResult, name string, paths map[string]string) {
	path, ok := paths[name]
	if !ok {
		r.staleBoot = append(r.staleBoot, name+" is missing")
		return
	}
	backing, err := backingFile(path)
	if err != nil {
		r.errs = append(r.errs, err.Error())
		return
	}
	if want := c.images[c.cur]; backing != want {
		r.staleBoot = append(r.staleBoot, fmt.Sprintf("%s backs onto %q, the configuration names %q", name, backing, want))
	}
}

// checkSeed checks that the member's cloud-init seed is there and says who the member is and
// which image the configuration names now (its metadata flips with the image). The seed is an
// uncompressed ISO 9660 image, so the meta-data's lines are in its bytes as written.
func (c *chaos) checkSeed(r *checkResult, member string, paths map[string]string) {
	name := engine.SeedVolumeName(member)
	path, ok := paths[name]
	if !ok {
		r.staleSeed = append(r.staleSeed, name+" is missing")
		return
	}
	data, err := os.ReadFile(path)
	if err != nil {
		r.errs = append(r.errs, err.Error())
		return
	}
	for _, want := range []string{fmt.Sprintf("local-hostname: %q", member), fmt.Sprintf("image: %q", filepath.Base(c.images[c.cur]))} {
		if !bytes.Contains(data, []byte(want)) {
			r.staleSeed = append(r.staleSeed, fmt.Sprintf("%s lacks %s", name, want))
		}
	}
}

// identity is the member index a domain stands for: the one its record names when the provider
// made it for this group, else the digits after the group's prefix, so that a temporary or
// renamed domain (tfchaos-roll-2-new) still counts against member 2. 0 is unknown.
func identity(d backend.Domain) int {
	if d.Record != nil && d.Record.Group == groupName && d.Record.Index > 0 {
		return d.Record.Index
	}
	rest := strings.TrimPrefix(d.Name, groupName+"-")
	end := 0
	for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
		end++
	}
	n, err := strconv.Atoi(rest[:end])
	if err != nil {
		return 0
	}
	return n
}

func identityText(idx int) string {
	if idx == 0 {
		return "unknown"
	}
	return memberName(idx)
}

func sortedKeys(m map[int][]string) []int {
	var ks []int
	for k := range m {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	return ks
}
