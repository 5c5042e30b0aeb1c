package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// rpcCounter is a unix socket in front of libvirtd's that counts the remote procedure calls
// passing through it, by procedure. The provider is pointed at it with
// LIBVIRT_DEFAULT_URI=qemu:///system?socket=<path>, which counts every libvirt call a terraform
// command makes, reads included (the provider's debug log only shows its writes). It only
// counts; the timed runs never go through it.
type rpcCounter struct {
	ln     net.Listener
	path   string
	mu     sync.Mutex
	counts map[uint32]int
}

// remoteProgram is libvirt's REMOTE_PROGRAM; keepalive and QEMU-specific calls have others.
const remoteProgram = 0x20008086

func startRPCCounter(path, upstream string) (*rpcCounter, error) {
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	c := &rpcCounter{ln: ln, path: path, counts: map[uint32]int{}}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go c.serve(conn, upstream)
		}
	}()
	return c, nil
}

func (c *rpcCounter) serve(client net.Conn, upstream string) {
	defer client.Close()
	server, err := net.Dial("unix", upstream)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: rpc counter cannot reach libvirtd:", err)
		return
	}
	defer server.Close()
	go func() {
		_, _ = io.Copy(client, server)
		client.Close()
	}()
	// Every libvirt RPC packet starts with its length (the length word included), then the
	// header: program, version, procedure, type (0 is a call), serial, status.
	hdr := make([]byte, 28)
	for {
		if _, err := io.ReadFull(client, hdr[:4]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(hdr[:4])
		if n < 28 {
			return
		}
		if _, err := io.ReadFull(client, hdr[4:28]); err != nil {
			return
		}
		prog, proc, typ := binary.BigEndian.Uint32(hdr[4:8]), binary.BigEndian.Uint32(hdr[12:16]), binary.BigEndian.Uint32(hdr[16:20])
		if prog == remoteProgram && typ == 0 {
			c.mu.Lock()
			c.counts[proc]++
			c.mu.Unlock()
		}
		if _, err := server.Write(hdr); err != nil {
			return
		}
		if _, err := io.CopyN(server, client, int64(n-28)); err != nil {
			return
		}
	}
}

// take returns the counts since the last take and starts again from zero.
func (c *rpcCounter) take() map[uint32]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.counts
	c.counts = map[uint32]int{}
	return out
}

func (c *rpcCounter) close() {
	c.ln.Close()
	os.Remove(c.path)
}

// procNames names the remote procedures the provider uses (go-libvirt keeps its procedure
// numbers in an internal package); others print as their number.
var procNames = map[uint32]string{
	1: "ConnectOpen", 2: "ConnectClose", 4: "ConnectGetVersion", 6: "NodeGetInfo", 9: "DomainCreate",
	11: "DomainDefineXML", 12: "DomainDestroy", 14: "DomainGetXMLDesc", 15: "DomainGetAutostart",
	16: "DomainGetInfo", 23: "DomainLookupByName", 29: "DomainSetAutostart", 46: "NetworkLookupByName",
	60: "ConnectSupportsFeature", 66: "AuthList", 83: "StoragePoolRefresh", 84: "StoragePoolLookupByName",
	87: "StoragePoolGetInfo", 88: "StoragePoolGetXMLDesc", 93: "StorageVolCreateXML", 94: "StorageVolDelete",
	95: "StorageVolLookupByName", 97: "StorageVolLookupByPath", 98: "StorageVolGetInfo",
	99: "StorageVolGetXMLDesc", 100: "StorageVolGetPath", 110: "ConnectGetURI", 142: "SecretDefineXML",
	143: "SecretGetXMLDesc", 146: "SecretUndefine", 147: "SecretLookupByUsage", 152: "NetworkIsActive",
	157: "ConnectGetLibVersion", 160: "DomainAttachDeviceFlags", 161: "DomainDetachDeviceFlags",
	212: "DomainGetState", 231: "DomainUndefineFlags", 251: "DomainBlockResize", 258: "DomainShutdownFlags",
	260: "StorageVolResize", 264: "DomainSetMetadata", 265: "DomainGetMetadata", 273: "ConnectListAllDomains",
	281: "ConnectListAllStoragePools", 282: "StoragePoolListAllVolumes", 287: "ConnectListAllSecrets",
	342: "ConnectGetDomainCapabilities", 344: "ConnectGetAllDomainStats", 350: "DomainDefineXMLFlags",
	360: "ConnectRegisterCloseCallback",
}

func procName(p uint32) string {
	if s, ok := procNames[p]; ok {
		return s
	}
	return fmt.Sprintf("proc#%d", p)
}

// callCount is the libvirt calls of one terraform command through the counter, and the backend
// messages of the provider's debug log for it.
type callCount struct {
	op    string
	procs map[uint32]int
	logs  map[string]int
	txn   txnCounts
}

func (c callCount) total() int {
	t := 0
	for _, n := range c.procs {
		t += n
	}
	return t
}

// breakdown lists the procedures, most called first, with calls per member for those called at
// least once per member.
func (c callCount) breakdown(members int) string {
	type kv struct {
		k uint32
		v int
	}
	var s []kv
	for k, v := range c.procs {
		s = append(s, kv{k, v})
	}
	sort.Slice(s, func(i, j int) bool { return s[i].v > s[j].v || s[i].v == s[j].v && s[i].k < s[j].k })
	var parts []string
	for _, e := range s {
		part := fmt.Sprintf("%s %d", procName(e.k), e.v)
		if e.v >= members {
			part += fmt.Sprintf(" (%.2f/member)", float64(e.v)/float64(members))
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, ", ")
}

func (c callCount) logBreakdown() string {
	var keys []string
	for k := range c.logs {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return c.logs[keys[i]] > c.logs[keys[j]] || c.logs[keys[i]] == c.logs[keys[j]] && keys[i] < keys[j]
	})
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%q %d", k, c.logs[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// logLine matches a provider log line in Terraform's log file, e.g.
// `[DEBUG] provider.terraform-provider-virt: set domain metadata: live=false @module=virt.backend ...`
// (the fields come in any order), and captures its message.
var logLine = regexp.MustCompile(`\[(?:TRACE|DEBUG|INFO|WARN|ERROR)\]\s+provider\.terraform-provider-virt[^:]*:\s+(.*?):\s+(?:@|[A-Za-z_]+=)`)

// backendMessages counts the debug log's messages by text, for lines of the backend subsystem.
func backendMessages(path string) (map[string]int, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]int{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.Contains(line, "@module=virt.backend") {
			continue
		}
		if m := logLine.FindStringSubmatch(line); m != nil {
			out[m[1]]++
		}
	}
	return out, nil
}

// txnCounts are the group record reads and writes and the engine plans of one terraform
// command, as its provider processes logged them (reconcile.LogCounts): the whole command
// (every walk: refresh, plan and apply), and, of that, the apply walk's process (the one that
// served ApplyResourceChange, which also plans each resource again before applying it).
type txnCounts struct {
	run, apply reconcile.Counts
	found      bool
}

func (t txnCounts) String() string {
	if !t.found {
		return "—"
	}
	return fmt.Sprintf("%d / %d / %d", t.run.RecordReads, t.run.RecordWrites, t.run.EnginePlans)
}

// applyString is the apply walk's part, "—" for a command that applied nothing.
func (t txnCounts) applyString() string {
	if !t.found || t.apply == (reconcile.Counts{}) {
		return "—"
	}
	return fmt.Sprintf("%d / %d / %d", t.apply.RecordReads, t.apply.RecordWrites, t.apply.EnginePlans)
}

var (
	countField = func(name string) *regexp.Regexp { return regexp.MustCompile(`\b` + name + `=(\d+)`) }
	pidField   = countField("pid")
	readsField = countField("record_reads")
	writeField = countField("record_writes")
	plansField = countField("engine_plans")
	rpcField   = regexp.MustCompile(`\btf_rpc=(\w+)`)
)

// transactionCounts reads a terraform command's debug log for the provider's count lines. The
// counts of a process only grow, so its last line has its totals; the command's are the sum
// over its processes.
func transactionCounts(path string) (txnCounts, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return txnCounts{}, nil
	}
	if err != nil {
		return txnCounts{}, err
	}
	num := func(re *regexp.Regexp, line string) int64 {
		m := re.FindStringSubmatch(line)
		if m == nil {
			return 0
		}
		n, _ := strconv.ParseInt(m[1], 10, 64)
		return n
	}
	last := map[int64]reconcile.Counts{}
	applied := map[int64]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.Contains(line, reconcile.CountsMessage) {
			continue
		}
		pid := num(pidField, line)
		c := reconcile.Counts{RecordReads: num(readsField, line), RecordWrites: num(writeField, line), EnginePlans: num(plansField, line)}
		if c.RecordReads >= last[pid].RecordReads && c.RecordWrites >= last[pid].RecordWrites && c.EnginePlans >= last[pid].EnginePlans {
			last[pid] = c
		}
		if m := rpcField.FindStringSubmatch(line); len(m) > 1 && m[1] == "ApplyResourceChange" {
			applied[pid] = true
		}
	}
	var t txnCounts
	for pid, c := range last {
		t.found = true
		t.run = addCounts(t.run, c)
		if applied[pid] {
			t.apply = addCounts(t.apply, c)
		}
	}
	return t, nil
}

func addCounts(a, b reconcile.Counts) reconcile.Counts {
	return reconcile.Counts{RecordReads: a.RecordReads + b.RecordReads, RecordWrites: a.RecordWrites + b.RecordWrites, EnginePlans: a.EnginePlans + b.EnginePlans}
}
