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
	"strings"
	"sync"
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
