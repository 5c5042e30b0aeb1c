package libvirt

import (
	"context"
	"encoding/base64"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func intp(i int) *int { return &i }

// TestExecResult: exit status 0 is healthy; anything else is a reason with the status and the
// first KiB of stdout then stderr, as the agent's base64 decodes.
func TestExecResult(t *testing.T) {
	long := strings.Repeat("x", 1001) + strings.Repeat("é", 20) // 1041 bytes: the cut at 1024 falls inside an é
	cases := []struct {
		name string
		st   execStatus
		want backend.ProbeResult
	}{
		{"exit 0", execStatus{Exited: true, ExitCode: intp(0), OutData: b64("ok\n")}, backend.ProbeResult{OK: true}},
		{"exit 0 with stderr", execStatus{Exited: true, ExitCode: intp(0), ErrData: b64("warning\n")}, backend.ProbeResult{OK: true}},
		{
			"tiny-service stopped",
			execStatus{Exited: true, ExitCode: intp(1), OutData: b64("tiny-service: stopped (by tiny-service stop)\n")},
			backend.ProbeResult{Reason: "exit status 1: tiny-service: stopped (by tiny-service stop)"},
		},
		{
			"stdout then stderr",
			execStatus{Exited: true, ExitCode: intp(3), OutData: b64("out\n"), ErrData: b64("err\n")},
			backend.ProbeResult{Reason: "exit status 3: out\nerr"},
		},
		{"no output", execStatus{Exited: true, ExitCode: intp(2)}, backend.ProbeResult{Reason: "exit status 2: "}},
		{"signal", execStatus{Exited: true, Signal: intp(9), OutData: b64("partial")}, backend.ProbeResult{Reason: "killed by signal 9: partial"}},
		{
			"first KiB, cut at a character",
			execStatus{Exited: true, ExitCode: intp(1), OutData: b64(long), ErrData: b64("never shown")},
			backend.ProbeResult{Reason: "exit status 1: " + long[:1023]},
		},
		{
			"stdout short, stderr fills the KiB",
			execStatus{Exited: true, ExitCode: intp(1), OutData: b64("out "), ErrData: b64(strings.Repeat("e", 2000))},
			backend.ProbeResult{Reason: "exit status 1: out " + strings.Repeat("e", 1020)},
		},
		{"undecodable", execStatus{Exited: true, ExitCode: intp(1), OutData: "%%%"}, backend.ProbeResult{Reason: "exit status 1: (undecodable output)"}},
		{"invalid UTF-8", execStatus{Exited: true, ExitCode: intp(1), OutData: b64("a\xffb")}, backend.ProbeResult{Reason: "exit status 1: a\uFFFDb"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := execResult(c.st)
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("execResult (-want +got):\n%s", diff)
			}
			if !utf8.ValidString(got.Reason) {
				t.Errorf("reason is not valid UTF-8: %q", got.Reason)
			}
		})
	}
	// The cut case really was cut inside a character, so the test covers the backing off.
	if utf8.ValidString(long[:1024]) {
		t.Fatal("the long output's first 1024 bytes end on a character boundary: the case tests nothing")
	}
}

func TestAgentSeconds(t *testing.T) {
	cases := map[time.Duration]int32{0: 1, time.Millisecond: 1, time.Second: 1, 1500 * time.Millisecond: 2, 5 * time.Second: 5}
	for d, want := range cases {
		if got := agentSeconds(d); got != want {
			t.Errorf("agentSeconds(%s) = %d, want %d", d, got, want)
		}
	}
}

func TestFirstIPv4(t *testing.T) {
	cases := []struct {
		name  string
		addrs []string
		want  string
	}{
		{"none", nil, ""},
		{"IPv6 only", []string{"fd00::5"}, ""},
		{"IPv6 first", []string{"fd00::5", "192.168.122.7"}, "192.168.122.7"},
		{"first of two", []string{"10.0.0.2", "10.0.0.3"}, "10.0.0.2"},
	}
	for _, c := range cases {
		if got := firstIPv4(c.addrs); got != c.want {
			t.Errorf("%s: firstIPv4(%v) = %q, want %q", c.name, c.addrs, got, c.want)
		}
	}
}

// TestDialProbe: an open port is healthy; a closed one fails with the dial error as the reason.
func TestDialProbe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	open := ln.Addr().String()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	closedLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := closedLn.Addr().String()
	_ = closedLn.Close()
	t.Cleanup(func() { _ = ln.Close() })

	if got := dialProbe(context.Background(), open, time.Second); !got.OK {
		t.Errorf("dial %s: %+v, want OK", open, got)
	}
	got := dialProbe(context.Background(), closed, time.Second)
	if got.OK || !strings.Contains(got.Reason, "dial tcp "+closed) || !strings.Contains(got.Reason, "connection refused") {
		t.Errorf("dial %s (closed): reason %q, want the dial error", closed, got.Reason)
	}
}

// TestHTTPProbe: the expected status is healthy, another one is a reason naming both; a
// redirect is not followed.
func TestHTTPProbe(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz":
			w.WriteHeader(http.StatusOK)
		case "/created":
			w.WriteHeader(http.StatusCreated)
		case "/broken":
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("tiny-service: stopped\n"))
		case "/moved":
			http.Redirect(w, r, "/healthz", http.StatusFound)
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)
	cases := []struct {
		name, path string
		expect     int
		want       backend.ProbeResult
	}{
		{"200, default expectation", "/healthz", 0, backend.ProbeResult{OK: true}},
		{"201 expected", "/created", 201, backend.ProbeResult{OK: true}},
		{"503", "/down", 200, backend.ProbeResult{Reason: "GET " + srv.URL + "/down: status 503 Service Unavailable, want 200"}},
		{"503 with a page", "/broken", 200, backend.ProbeResult{Reason: "GET " + srv.URL + "/broken: status 503 Service Unavailable, want 200: tiny-service: stopped"}},
		{"redirect not followed", "/moved", 200, backend.ProbeResult{Reason: "GET " + srv.URL + "/moved: status 302 Found, want 200: <a href=\"/healthz\">Found</a>."}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := httpProbe(context.Background(), srv.URL+c.path, c.expect, time.Second)
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("httpProbe (-want +got):\n%s", diff)
			}
		})
	}
	got := httpProbe(context.Background(), "http://127.0.0.1:1/healthz", 200, time.Second)
	if got.OK || !strings.Contains(got.Reason, "connection refused") {
		t.Errorf("nothing listening: %+v, want the request's error", got)
	}
}

func TestDecodeAnswer(t *testing.T) {
	cases := []struct {
		name, out, want string
		pid             int
	}{
		{"pid", `{"return":{"pid":342}}`, "", 342},
		{"not JSON", `garbage`, "unexpected answer from the guest agent (invalid character 'g' looking for beginning of value): garbage", 0},
		{"no return", `{"error":{}}`, `unexpected answer from the guest agent (no "return" member): {"error":{}}`, 0},
		{"wrong type", `{"return":{"pid":"x"}}`, `unexpected answer from the guest agent (json: cannot unmarshal string into Go struct field .pid of type int): {"return":{"pid":"x"}}`, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var v struct {
				PID int `json:"pid"`
			}
			if got := decodeAnswer(c.out, &v); got != c.want || v.PID != c.pid {
				t.Errorf("decodeAnswer(%s) = %q, pid %d; want %q, pid %d", c.out, got, v.PID, c.want, c.pid)
			}
		})
	}
}
