package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/virtfleet/terraform-provider-virt/internal/backend/libvirt"
	"github.com/virtfleet/terraform-provider-virt/internal/procstats"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/protocol"
)

// With VIRT_CPUPROFILE_DIR set, each provider process also writes proc-<pid>.json there when it
// ends: its wall time, its CPU, the Terraform calls it served (each with when it started and how
// long it took) and its libvirt calls (libvirt.RPCStats). make bench-cli -profile puts them beside
// Terraform's own profile to split a command's time between Terraform, the provider's starts, its
// CPU and libvirt.

type (
	procStats  = procstats.Stats
	servedCall = procstats.ServedCall
)

// servedCall is one Terraform call the process served: At is from the process's start.
type statsRecorder struct {
	dir     string
	started time.Time
	mu      sync.Mutex
	calls   []servedCall
}

func newStatsRecorder(dir string) *statsRecorder {
	libvirt.EnableRPCStats()
	return &statsRecorder{dir: dir, started: time.Now()}
}

func (r *statsRecorder) served(method string, start time.Time) {
	end := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.calls) < 1000 {
		r.calls = append(r.calls, servedCall{Method: method, At: start.Sub(r.started), Took: end.Sub(start)})
	}
}

// write writes proc-<pid>.json; a failure is only reported, as the profile's is.
func (r *statsRecorder) write() {
	s := procStats{PID: os.Getpid(), Started: r.started, Wall: time.Since(r.started), Libvirt: libvirt.RPCStatsNow()}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		s.User = time.Duration(ru.Utime.Nano())
		s.Sys = time.Duration(ru.Stime.Nano())
		s.MaxRSS = ru.Maxrss
	}
	r.mu.Lock()
	s.Calls = append([]servedCall(nil), r.calls...)
	r.mu.Unlock()
	b, err := json.MarshalIndent(s, "", " ")
	if err == nil {
		err = os.WriteFile(filepath.Join(r.dir, fmt.Sprintf("proc-%d.json", s.PID)), b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "provider process stats:", err)
	}
}

// timedServer is the provider's server with the calls Terraform makes of every process (and the
// resource calls) timed. It embeds the concrete server, so that the optional servers Terraform
// finds by type assertion (list resources, actions) stay visible.
type timedServer struct {
	*protocol.ProtocolServer
	r *statsRecorder
}

func (s timedServer) GetMetadata(ctx context.Context, req *tfprotov6.GetMetadataRequest) (*tfprotov6.GetMetadataResponse, error) {
	defer s.r.served("GetMetadata", time.Now())
	return s.ProtocolServer.GetMetadata(ctx, req)
}

func (s timedServer) GetProviderSchema(ctx context.Context, req *tfprotov6.GetProviderSchemaRequest) (*tfprotov6.GetProviderSchemaResponse, error) {
	defer s.r.served("GetProviderSchema", time.Now())
	return s.ProtocolServer.GetProviderSchema(ctx, req)
}

func (s timedServer) ValidateProviderConfig(ctx context.Context, req *tfprotov6.ValidateProviderConfigRequest) (*tfprotov6.ValidateProviderConfigResponse, error) {
	defer s.r.served("ValidateProviderConfig", time.Now())
	return s.ProtocolServer.ValidateProviderConfig(ctx, req)
}

func (s timedServer) ConfigureProvider(ctx context.Context, req *tfprotov6.ConfigureProviderRequest) (*tfprotov6.ConfigureProviderResponse, error) {
	defer s.r.served("ConfigureProvider", time.Now())
	return s.ProtocolServer.ConfigureProvider(ctx, req)
}

func (s timedServer) ValidateResourceConfig(ctx context.Context, req *tfprotov6.ValidateResourceConfigRequest) (*tfprotov6.ValidateResourceConfigResponse, error) {
	defer s.r.served("ValidateResourceConfig", time.Now())
	return s.ProtocolServer.ValidateResourceConfig(ctx, req)
}

func (s timedServer) UpgradeResourceState(ctx context.Context, req *tfprotov6.UpgradeResourceStateRequest) (*tfprotov6.UpgradeResourceStateResponse, error) {
	defer s.r.served("UpgradeResourceState", time.Now())
	return s.ProtocolServer.UpgradeResourceState(ctx, req)
}

func (s timedServer) ReadResource(ctx context.Context, req *tfprotov6.ReadResourceRequest) (*tfprotov6.ReadResourceResponse, error) {
	defer s.r.served("ReadResource", time.Now())
	return s.ProtocolServer.ReadResource(ctx, req)
}

func (s timedServer) PlanResourceChange(ctx context.Context, req *tfprotov6.PlanResourceChangeRequest) (*tfprotov6.PlanResourceChangeResponse, error) {
	defer s.r.served("PlanResourceChange", time.Now())
	return s.ProtocolServer.PlanResourceChange(ctx, req)
}

func (s timedServer) ApplyResourceChange(ctx context.Context, req *tfprotov6.ApplyResourceChangeRequest) (*tfprotov6.ApplyResourceChangeResponse, error) {
	defer s.r.served("ApplyResourceChange", time.Now())
	return s.ProtocolServer.ApplyResourceChange(ctx, req)
}

func (s timedServer) ReadDataSource(ctx context.Context, req *tfprotov6.ReadDataSourceRequest) (*tfprotov6.ReadDataSourceResponse, error) {
	defer s.r.served("ReadDataSource", time.Now())
	return s.ProtocolServer.ReadDataSource(ctx, req)
}
