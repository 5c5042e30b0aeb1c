package libvirt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// The network probes (tcp, http) run from the machine that runs Terraform against the member's
// IPv4 address, as a client of the service would; the guest agent's probes are in probe.go.

// httpBodyLimit is how much of a failed http probe's page its reason quotes.
const httpBodyLimit = 256

// probeNet dials the domain's IPv4 address (tcp) or asks it for a page (http) from this machine.
func (b *Backend) probeNet(ctx context.Context, name string, spec backend.ProbeSpec, timeout time.Duration) (backend.ProbeResult, error) {
	ip, why, err := b.probeAddress(ctx, name)
	if err != nil {
		return backend.ProbeResult{}, err
	}
	if ip == "" {
		return backend.ProbeResult{Reason: why}, nil
	}
	addr := net.JoinHostPort(ip, strconv.Itoa(spec.Port))
	if engine.ProbeKind(spec.Kind) == engine.ProbeTCP {
		return dialProbe(ctx, addr, timeout), nil
	}
	return httpProbe(ctx, "http://"+addr+httpPath(spec.Path), spec.ExpectStatus, timeout), nil
}

// probeAddress is the domain's first IPv4 address, as the DHCP leases of the libvirt networks its
// interfaces are on tell it (libvirt matches them by MAC, as the data source's addresses do), else
// as its guest agent tells it. The leases come first, unlike the data source's order: they only
// know cards on libvirt networks, which this machine can route to, while the agent also reports
// a user-mode card's 10.0.2.15, reachable from nowhere but the guest. The agent still serves a
// guest with a static address. No address is a reason, not an error.
func (b *Backend) probeAddress(ctx context.Context, name string) (ip, why string, err error) {
	var agentWhy string
	err = b.do(ctx, "read the addresses of domain", name, func(c conn) error {
		ip, agentWhy = "", ""
		d, err := c.lookup(name)
		if err != nil {
			return err
		}
		for _, src := range []golibvirt.DomainInterfaceAddressesSource{golibvirt.DomainInterfaceAddressesSrcLease, golibvirt.DomainInterfaceAddressesSrcAgent} {
			ifaces, err := c.l.DomainInterfaceAddresses(d, uint32(src), 0)
			var lerr golibvirt.Error
			if errors.As(err, &lerr) {
				if src == golibvirt.DomainInterfaceAddressesSrcAgent {
					agentWhy = lerr.Message
				}
				continue
			}
			if err != nil {
				return wrap("read the addresses of domain", name, err)
			}
			if ip = firstIPv4(guestAddresses(ifaces)); ip != "" {
				return nil
			}
		}
		return nil
	})
	if err != nil || ip != "" {
		return ip, "", err
	}
	why = "no IPv4 address: neither a DHCP lease of its networks nor its guest agent gives one"
	if agentWhy != "" {
		why += " (guest agent: " + agentWhy + ")"
	}
	return "", why, nil
}

func firstIPv4(addrs []string) string {
	for _, a := range addrs {
		if ip := net.ParseIP(a); ip != nil && ip.To4() != nil {
			return a
		}
	}
	return ""
}

func httpPath(p string) string {
	if !strings.HasPrefix(p, "/") {
		return "/" + p
	}
	return p
}

// dialProbe is healthy when a TCP connection to addr opens within the timeout; its reason is the
// dial error.
func dialProbe(ctx context.Context, addr string, timeout time.Duration) backend.ProbeResult {
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return backend.ProbeResult{Reason: err.Error()}
	}
	_ = c.Close()
	return backend.ProbeResult{OK: true}
}

// httpProbe is healthy when a GET of url answers with the expected status (200 when none is
// given) within the timeout; its reason is the status it got and the start of the page, or the
// request's error.
func httpProbe(ctx context.Context, url string, expect int, timeout time.Duration) backend.ProbeResult {
	if expect == 0 {
		expect = http.StatusOK
	}
	client := http.Client{
		Timeout: timeout,
		// A probe judges the page it asked for, not one it is sent on to.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport:     &http.Transport{Proxy: nil, DisableKeepAlives: true},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return backend.ProbeResult{Reason: err.Error()}
	}
	resp, err := client.Do(req)
	if err != nil {
		return backend.ProbeResult{Reason: err.Error()}
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, httpBodyLimit))
	if resp.StatusCode == expect {
		return backend.ProbeResult{OK: true}
	}
	reason := fmt.Sprintf("GET %s: status %s, want %d", url, resp.Status, expect)
	// A health page usually says what is wrong: quote the start of it.
	if text := strings.TrimSpace(strings.ToValidUTF8(string(body), "\uFFFD")); text != "" {
		reason += ": " + text
	}
	return backend.ProbeResult{Reason: reason}
}
