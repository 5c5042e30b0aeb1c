package libvirt

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// execOutputLimit is how much of a failed exec probe's output its reason quotes.
const execOutputLimit = 1024

// execPollFirst and execPollMax space the guest-exec-status calls of an exec probe: a command as
// small as a status check ends within the first few, and a slow one costs at most one call per
// execPollMax.
const (
	execPollFirst = 50 * time.Millisecond
	execPollMax   = 500 * time.Millisecond
)

// Probe runs one health probe against the running domain (see backend.Backend). A probe that ran
// and failed, libvirt's refusal included ("domain is not running", "guest agent is not
// connected"), is a result with OK false and a reason that quotes it; only a host that cannot be
// asked (the connection is down) or a domain that is not there is an error.
//
// The probe's timeout bounds the guest agent's answer through libvirt's own agent timeout, not
// through ctx: a context that ends cuts the connection (see within), which every other call on it
// would pay for.
func (b *Backend) Probe(ctx context.Context, name string, spec backend.ProbeSpec) (backend.ProbeResult, error) {
	timeout := spec.Timeout
	if timeout <= 0 {
		timeout = engine.DefaultProbeTimeout
	}
	var res backend.ProbeResult
	var err error
	switch engine.ProbeKind(spec.Kind) {
	case engine.ProbeGuestAgent:
		res, err = b.probeAgent(ctx, name, timeout)
	case engine.ProbeExec:
		res, err = b.probeExec(ctx, name, spec.Command, timeout)
	case engine.ProbeTCP, engine.ProbeHTTP:
		res, err = b.probeNet(ctx, name, spec, timeout)
	default:
		return backend.ProbeResult{}, fmt.Errorf("probe domain %s: unknown probe kind %q", name, spec.Kind)
	}
	fields := map[string]any{"domain": name, "kind": spec.Kind, "ok": res.OK}
	if err != nil {
		fields["error"] = err.Error()
	} else if !res.OK {
		fields["reason"] = res.Reason
	}
	tflog.SubsystemDebug(ctx, Subsystem, "probed domain", fields)
	return res, err
}

// agentRefusal is a guest agent command that libvirt (or the agent through it) answered with an
// error: the probe ran, and this is why it failed.
type agentRefusal struct{ msg string }

func (e *agentRefusal) Error() string { return e.msg }

// agentCommand sends one command to the domain's guest agent and returns the agent's answer. An
// error libvirt answered with is an *agentRefusal; any other error is the host's.
func (b *Backend) agentCommand(ctx context.Context, op, name, cmd string, timeout time.Duration) (string, error) {
	var out string
	var refusal *agentRefusal
	err := b.do(ctx, op, name, func(c conn) error {
		out, refusal = "", nil
		d, err := c.lookup(name)
		if err != nil {
			return err
		}
		r, err := c.l.QEMUDomainAgentCommand(d, cmd, agentSeconds(timeout), 0)
		var lerr golibvirt.Error
		if errors.As(err, &lerr) {
			refusal = &agentRefusal{msg: lerr.Message}
			return nil
		}
		if err != nil {
			return wrap(op, name, err)
		}
		if len(r) > 0 {
			out = r[0]
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if refusal != nil {
		return "", refusal
	}
	return out, nil
}

// agentSeconds is libvirt's agent timeout (whole seconds, at least one) for a probe's timeout.
func agentSeconds(d time.Duration) int32 {
	s := (d + time.Second - 1) / time.Second
	return int32(min(max(s, 1), 1<<30))
}

// agentResult runs one agent command and decodes its "return" member into v. A refusal is
// returned as the probe's failed result (ok false, err nil).
func (b *Backend) agentResult(ctx context.Context, op, name string, cmd any, timeout time.Duration, v any) (backend.ProbeResult, bool, error) {
	req, err := json.Marshal(cmd)
	if err != nil {
		return backend.ProbeResult{}, false, fmt.Errorf("%s %s: %w", op, name, err)
	}
	out, err := b.agentCommand(ctx, op, name, string(req), timeout)
	var refusal *agentRefusal
	if errors.As(err, &refusal) {
		return backend.ProbeResult{Reason: refusal.msg}, false, nil
	}
	if err != nil {
		return backend.ProbeResult{}, false, err
	}
	if v == nil {
		return backend.ProbeResult{}, true, nil
	}
	// An answer that does not decode is the guest's fault (an agent of another kind, say), so it
	// fails the probe rather than the call.
	if why := decodeAnswer(out, v); why != "" {
		return backend.ProbeResult{Reason: fmt.Sprintf("%s: %s", op, why)}, false, nil
	}
	return backend.ProbeResult{}, true, nil
}

// decodeAnswer decodes an agent answer's "return" member into v; it returns why it could not, or "".
func decodeAnswer(out string, v any) string {
	var answer struct {
		Return json.RawMessage `json:"return"`
	}
	err := json.Unmarshal([]byte(out), &answer)
	if err == nil && len(answer.Return) == 0 {
		err = errors.New(`no "return" member`)
	}
	if err == nil {
		err = json.Unmarshal(answer.Return, v)
	}
	if err != nil {
		return fmt.Sprintf("unexpected answer from the guest agent (%v): %.200s", err, out)
	}
	return ""
}

type agentCmd struct {
	Execute   string `json:"execute"`
	Arguments any    `json:"arguments,omitempty"`
}

// probeAgent pings the guest agent.
func (b *Backend) probeAgent(ctx context.Context, name string, timeout time.Duration) (backend.ProbeResult, error) {
	res, ok, err := b.agentResult(ctx, "ping the guest agent of domain", name, agentCmd{Execute: "guest-ping"}, timeout, nil)
	if err != nil || !ok {
		return res, err
	}
	return backend.ProbeResult{OK: true}, nil
}

// execStatus is guest-exec-status's answer.
type execStatus struct {
	Exited       bool   `json:"exited"`
	ExitCode     *int   `json:"exitcode"`
	Signal       *int   `json:"signal"`
	OutData      string `json:"out-data"`
	ErrData      string `json:"err-data"`
	OutTruncated bool   `json:"out-truncated"`
	ErrTruncated bool   `json:"err-truncated"`
}

// probeExec runs the command in the guest through the agent (guest-exec) and asks for its end
// (guest-exec-status) until it ended or the timeout passed: healthy on exit status 0.
func (b *Backend) probeExec(ctx context.Context, name string, command []string, timeout time.Duration) (backend.ProbeResult, error) {
	if len(command) == 0 {
		return backend.ProbeResult{}, fmt.Errorf("probe domain %s: exec probe without a command", name)
	}
	deadline := time.Now().Add(timeout)
	args := command[1:]
	if args == nil {
		args = []string{}
	}
	var started struct {
		PID *int `json:"pid"`
	}
	cmd := agentCmd{Execute: "guest-exec", Arguments: map[string]any{"path": command[0], "arg": args, "capture-output": true}}
	res, ok, err := b.agentResult(ctx, "run a command through the guest agent of domain", name, cmd, timeout, &started)
	if err != nil || !ok {
		return res, err
	}
	if started.PID == nil {
		return backend.ProbeResult{Reason: "guest-exec: the guest agent gave no pid"}, nil
	}
	wait := execPollFirst
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return backend.ProbeResult{}, fmt.Errorf("probe domain %s: wait for %s: %w", name, command[0], ctx.Err())
		case <-timer.C:
		}
		left := time.Until(deadline)
		var st execStatus
		cmd := agentCmd{Execute: "guest-exec-status", Arguments: map[string]int{"pid": *started.PID}}
		res, ok, err := b.agentResult(ctx, "read the status of a command through the guest agent of domain", name, cmd, max(left, time.Second), &st)
		if err != nil || !ok {
			return res, err
		}
		if st.Exited {
			return execResult(st), nil
		}
		left = time.Until(deadline)
		if left <= 0 {
			return backend.ProbeResult{Reason: fmt.Sprintf("%s did not exit within %s", strings.Join(command, " "), timeout)}, nil
		}
		wait = min(2*wait, execPollMax)
		timer.Reset(min(wait, left))
	}
}

// execResult judges an ended command: healthy on exit status 0, else a reason with its status and
// the first execOutputLimit bytes of its standard output and then its standard error.
func execResult(st execStatus) backend.ProbeResult {
	status := "exit status ?"
	switch {
	case st.Signal != nil:
		status = fmt.Sprintf("killed by signal %d", *st.Signal)
	case st.ExitCode != nil:
		if *st.ExitCode == 0 {
			return backend.ProbeResult{OK: true}
		}
		status = "exit status " + strconv.Itoa(*st.ExitCode)
	}
	return backend.ProbeResult{Reason: status + ": " + execOutput(st.OutData, st.ErrData)}
}

// execOutput decodes the agent's base64 output and error data and keeps the first
// execOutputLimit bytes of the two together, cut at a character boundary, without trailing
// white space.
func execOutput(out, errData string) string {
	var b []byte
	for _, s := range []string{out, errData} {
		d, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			d = []byte("(undecodable output)")
		}
		b = append(b, d...)
		if len(b) >= execOutputLimit {
			break
		}
	}
	if len(b) > execOutputLimit {
		b = b[:execOutputLimit]
		// Drop a character the cut went through rather than show half of it.
		for i := 0; i < utf8.UTFMax-1 && len(b) > 0; i++ {
			if r, size := utf8.DecodeLastRune(b); r != utf8.RuneError || size > 1 {
				break
			}
			b = b[:len(b)-1]
		}
	}
	return strings.TrimRight(strings.ToValidUTF8(string(b), "\uFFFD"), " \t\r\n")
}
