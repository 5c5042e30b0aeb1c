// This file holds the CLI bench's -profile breakdown: where each timed command's wall time went,
// from the profiles and times its processes wrote (issue 47).

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/virtfleet/terraform-provider-virt/internal/procstats"
)

// procFile is what a provider process writes to proc-<pid>.json under VIRT_CPUPROFILE_DIR.
type procFile = procstats.Stats

// profileRow is one command's breakdown.
type profileRow struct {
	op    string
	wall  time.Duration
	tfCPU time.Duration // terraform's own: its process's CPU less its plugins'
	procs []procFile
	// tfTop and provTop are the functions with the most CPU below them (cumulative), runtime and
	// plumbing left out; dir holds the profiles and pprof's full listings.
	tfTop, provTop string
	dir            string
}

// profileOf reads the profile directory of a command that ended as res.
func profileOf(op string, res tfResult) (profileRow, error) {
	row := profileRow{op: op, wall: res.dur, dir: res.profile}
	files, _ := filepath.Glob(filepath.Join(res.profile, "proc-*.json"))
	var provCPU time.Duration
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return row, err
		}
		var p procFile
		if err := json.Unmarshal(b, &p); err != nil {
			return row, fmt.Errorf("%s: %w", f, err)
		}
		row.procs = append(row.procs, p)
		provCPU += p.CPU()
	}
	sort.Slice(row.procs, func(i, j int) bool { return row.procs[i].Started.Before(row.procs[j].Started) })
	row.tfCPU = res.cpu - provCPU
	tf, _ := filepath.Glob(filepath.Join(res.profile, "terraform-*.pprof"))
	prov, _ := filepath.Glob(filepath.Join(res.profile, "cpu-*.pprof"))
	row.tfTop = topFunctions(filepath.Join(res.profile, "terraform-top.txt"), tf)
	row.provTop = topFunctions(filepath.Join(res.profile, "provider-top.txt"), prov)
	return row, nil
}

// topFunctions runs go tool pprof -top -cum on the profiles (merged), writes its listing to
// out, and returns the first functions of the listing that are neither the runtime's nor
// plumbing (goroutine entry points, gRPC, plugin serving), with their share of the profile.
func topFunctions(out string, profiles []string) string {
	if len(profiles) == 0 {
		return "no profile"
	}
	args := append([]string{"tool", "pprof", "-top", "-cum", "-nodecount=60"}, profiles...)
	b, err := exec.Command("go", args...).CombinedOutput()
	_ = os.WriteFile(out, b, 0o644)
	if err != nil {
		return "pprof failed (" + out + ")"
	}
	var picked []string
	total := ""
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "Showing nodes") || strings.HasPrefix(line, "Duration:") {
			if i := strings.Index(line, "Total samples = "); i >= 0 {
				total = strings.Fields(line[i+len("Total samples = "):])[0]
			}
			continue
		}
		fs := strings.Fields(line)
		if len(fs) < 6 || !strings.HasSuffix(fs[4], "%") {
			continue
		}
		name := strings.Join(fs[5:], " ")
		if plumbing(name) {
			continue
		}
		picked = append(picked, fmt.Sprintf("%s %s", shortFunc(name), fs[4]))
		if len(picked) == 4 {
			break
		}
	}
	return fmt.Sprintf("%s: %s", total, strings.Join(picked, ", "))
}

func plumbing(name string) bool {
	for _, p := range []string{"runtime.", "google.golang.org/grpc", "golang.org/x/net/http2", "github.com/hashicorp/go-plugin",
		"main.", "syscall.", "internal/", "sync.", "net.", "bufio.", "io.", "os.", "github.com/hashicorp/terraform-plugin-go/tfprotov6/tf6server.",
		"github.com/hashicorp/terraform/internal/command.", "github.com/hashicorp/terraform/internal/backend/local.", "github.com/mitchellh/cli",
		"github.com/hashicorp/terraform/internal/terraform.(*Context).", "github.com/hashicorp/terraform/internal/dag.", "github.com/hashicorp/terraform/internal/tfdiags",
		"github.com/hashicorp/terraform/internal/terraform.(*ContextGraphWalker)", "github.com/hashicorp/terraform/internal/terraform.(*graphWalk"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// shortFunc drops the module path of a function's name.
func shortFunc(name string) string {
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	return name
}

// servedSummary sums a process's served calls by method, in order of first call.
func servedSummary(p procFile) string {
	var order []string
	took := map[string]time.Duration{}
	n := map[string]int{}
	for _, c := range p.Calls {
		if n[c.Method] == 0 {
			order = append(order, c.Method)
		}
		n[c.Method]++
		took[c.Method] += c.Took
	}
	var parts []string
	for _, m := range order {
		s := fmt.Sprintf("%s %.2f", strings.TrimSuffix(strings.TrimSuffix(m, "ResourceChange"), "Provider"), took[m].Seconds())
		if n[m] > 1 {
			s += fmt.Sprintf("×%d", n[m])
		}
		parts = append(parts, s)
	}
	first := time.Duration(0)
	if len(p.Calls) > 0 {
		first = p.Calls[0].At
	}
	return fmt.Sprintf("wall %.2f, CPU %.2f, first call at %.2f: %s", p.Wall.Seconds(), p.CPU().Seconds(), first.Seconds(), strings.Join(parts, ", "))
}

// profileReport is the breakdown section of the report.
func profileReport(results []sizeResult) string {
	var b strings.Builder
	headed := false
	for _, r := range results {
		if len(r.profiles) == 0 {
			continue
		}
		if !headed {
			b.WriteString("\n### Where the time goes (-profile)\n\n")
			b.WriteString("Every timed command run with `VIRT_CPUPROFILE_DIR` (the provider's processes write their CPU profile and proc-<pid>.json: wall, CPU, " +
				"the Terraform calls served and their seconds, the libvirt calls timed on the socket) and a Terraform built with `TF_PROFILE_HOOK=1` " +
				"(tools/terraform-build.sh; its own CPU profile). Terraform CPU is its process's, its plugins' taken out. libvirt busy is the wall time during which " +
				"a libvirt call of the command was waiting for its answer; sum adds the calls' latencies. Top: the functions with the most CPU below them " +
				"(cumulative share of that process's samples), runtime and plumbing left out. Plans: the last of the runs. Profiling costs a few percent.\n\n")
			b.WriteString("| N | command | wall | floor | terraform CPU | provider processes | provider CPU | libvirt calls, busy (sum) | terraform top | provider top |\n")
			b.WriteString("| ---: | --- | ---: | ---: | ---: | ---: | ---: | --- | --- | --- |\n")
			headed = true
		}
		floors := map[string]time.Duration{}
		for _, row := range r.rows {
			floors[row.op] = row.floor
		}
		for _, p := range r.profiles {
			var cpu, busy, sum time.Duration
			var calls int64
			for _, pr := range p.procs {
				cpu += pr.CPU()
				busy += pr.Libvirt.Busy
				sum += pr.Libvirt.Sum
				calls += pr.Libvirt.Calls
			}
			floor := "—"
			if f := floors[p.op]; f > 0 {
				floor = secs(f)
			}
			fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %d | %s | %d, %s (%s) | %s | %s |\n", r.n, p.op, secs(p.wall), floor, secs(p.tfCPU),
				len(p.procs), secs(cpu), calls, secs(busy), secs(sum), oneLine(p.tfTop), oneLine(p.provTop))
		}
	}
	if !headed {
		return ""
	}
	b.WriteString("\nEach provider process, in order of start (seconds; the calls it served with their total time):\n\n")
	for _, r := range results {
		for _, p := range r.profiles {
			fmt.Fprintf(&b, "- N=%d %s (%s):\n", r.n, p.op, p.dir)
			for i, pr := range p.procs {
				fmt.Fprintf(&b, "  %d. %s; libvirt %d calls, busy %.2f\n", i+1, servedSummary(pr), pr.Libvirt.Calls, pr.Libvirt.Busy.Seconds())
			}
		}
	}
	return b.String()
}
