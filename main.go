// Command terraform-provider-virt serves the virt provider to Terraform over protocol 6.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6/tf6server"

	"github.com/virtfleet/terraform-provider-virt/internal/lifetime"
	"github.com/virtfleet/terraform-provider-virt/internal/provider"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/protocol"
)

// version and commit are set at link time: by goreleaser (-X main.version={{.Version}}
// -X main.commit={{.Commit}}, see .goreleaser.yml) and by make build (from git describe).
var (
	version = "dev"
	commit  = "none"
)

func main() {
	if err := run(); err != nil {
		log.Fatal(err.Error())
	}
}

func run() error {
	if os.Getenv("GOGC") == "" {
		// A plan of a large group is mostly short-lived values (the plugin framework converts
		// every member's attributes several times), and collecting them is a large share of
		// its CPU: collect less often, at the cost of a larger heap.
		debug.SetGCPercent(400)
	}
	logLevels()
	var debugMode, showVersion bool
	flag.BoolVar(&debugMode, "debug", false, "run the provider with support for debuggers like delve")
	flag.BoolVar(&showVersion, "version", false, "print the version and commit, then exit")
	flag.Parse()
	if showVersion {
		fmt.Printf("terraform-provider-virt %s (commit %s)\n", version, commit)
		return nil
	}
	var stats *statsRecorder
	if dir := os.Getenv("VIRT_CPUPROFILE_DIR"); dir != "" {
		// For performance work: each provider process Terraform starts writes its CPU profile
		// there when Terraform stops it (go tool pprof reads it), and its times (main_profile.go).
		stop, err := startProfile(dir)
		if err != nil {
			return err
		}
		defer stop()
		stats = newStatsRecorder(dir)
		defer stats.write()
	}
	var life *lifetime.Lifetime
	if !debugMode && os.Getenv(pluginCookie) != "" {
		// Started by Terraform: end when it is gone. A debug server is started by a person (or
		// a debugger) and outlives any one Terraform; a test serves the provider in its own
		// process, without this main.
		life = lifetime.New()
		endWithParent(life, os.Getppid())
	}
	server, err := protocol.NewProtocol6Within(provider.New(version)(), life)()
	if err != nil {
		return err
	}
	if ps, ok := server.(*protocol.ProtocolServer); ok && stats != nil {
		server = timedServer{ProtocolServer: ps, r: stats}
	}
	var opts []tf6server.ServeOpt
	if debugMode {
		opts = append(opts, tf6server.WithManagedDebug())
	}
	return tf6server.Serve("registry.terraform.io/virtfleet/virt", func() tfprotov6.ProviderServer { return server }, opts...)
}

// pluginCookie is the variable go-plugin's handshake sets in a plugin Terraform starts (its magic
// cookie); the plugin refuses to serve without it unless it serves for a debugger.
const pluginCookie = "TF_PLUGIN_MAGIC_COOKIE"

// parentPoll is how often the plugin looks whether Terraform is gone, and exitGrace how long it
// then gives the work in flight to end (an apply cut off gives its lease back within
// reconcile.ReleaseBound) before it exits.
const (
	parentPoll = time.Second
	exitGrace  = 30 * time.Second
)

// endWithParent ends the plugin when its parent, the Terraform process that started it, is gone
// (killed with SIGKILL, it stops nothing; issue 43): the work in flight is cancelled, and the
// plugin exits once that work has returned, or after exitGrace.
func endWithParent(life *lifetime.Lifetime, parent int) {
	gone, ok := lifetime.ParentGone(parent)
	if !ok {
		return
	}
	// Terraform reads the plugin's stdout and stderr, where its logs go. Once Terraform is gone,
	// a write there would end the plugin with SIGPIPE at once, its lease held (with logs on, the
	// first thing the cancelled apply does is log): such a write fails instead.
	signal.Ignore(syscall.SIGPIPE)
	ticker := time.NewTicker(parentPoll)
	go func() {
		<-lifetime.Watch(context.Background(), gone, ticker.C)
		ticker.Stop()
		log.Printf("[WARN] Terraform (pid %d) is gone: cancelling the work in flight, then exiting", parent)
		code := 0
		if !life.End(time.After(exitGrace)) {
			log.Printf("[ERROR] work in flight did not end within %s of Terraform going away; exiting", exitGrace)
			code = 1
		}
		os.Exit(code)
	}()
}

// logLevels gives the plugin's loggers the level Terraform shows provider logs at: TF_LOG_PROVIDER,
// else TF_LOG, else none (off). A logger whose variable is set keeps it. Left unset, each of them
// writes every entry of every level to the plugin's stderr, for Terraform to read and throw away
// what it does not show: at 1,000 members an apply with TF_LOG unset wrote over 3,000 lines (1.2
// MB), and the framework built some of its entries once per value of the group's instances with a
// context growing by one per value (about a second of CPU per plan that changes such a group;
// issue 14). What Terraform shows is the same.
func logLevels() {
	level := os.Getenv("TF_LOG_PROVIDER")
	if level == "" {
		level = os.Getenv("TF_LOG")
	}
	if level == "" {
		level = "off"
	}
	// The provider's own logger, the plugin SDK's, its protocol subsystem's and the framework's.
	for _, name := range []string{"TF_LOG_PROVIDER_VIRT", "TF_LOG_SDK", "TF_LOG_SDK_PROTO", "TF_LOG_SDK_FRAMEWORK"} {
		if os.Getenv(name) == "" {
			os.Setenv(name, level)
		}
	}
}

func startProfile(dir string) (func(), error) {
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("cpu-%d.pprof", os.Getpid())))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
