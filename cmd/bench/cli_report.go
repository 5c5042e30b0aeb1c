// This file holds the CLI bench's report: the markdown it writes, and the host facts it names.

package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

func (c *cliBench) report(f fixedCost, results []sizeResult, running *runningResult) string {
	var b strings.Builder
	host, _ := os.Hostname()
	version := c.version
	fmt.Fprintf(&b, "## The provider through the terraform CLI vs the go-libvirt floor\n\n")
	fmt.Fprintf(&b, "%s, %s, %d CPUs, %s; %s; provider %s (make build); pool %s.",
		time.Now().Format("2006-01-02 15:04"), host, runtime.NumCPU(), memTotal(), f.version, version, c.o.pool)
	if len(results) == 0 {
		// The running case alone (-sizes ""): its section says what it ran.
		b.WriteString("\n")
	} else {
		c.reportStopped(&b, f, results)
	}
	if running != nil {
		b.WriteString(running.report())
	}
	fmt.Fprintf(&b, "\nWhole run: %s.\n", time.Since(c.started).Round(time.Second))
	return b.String()
}

// reportStopped is the report's part on the group of stopped members at each size.
func (c *cliBench) reportStopped(b *strings.Builder, f fixedCost, results []sizeResult) {
	fmt.Fprintf(b, " One `virt_stateful_group`, members stopped "+
		"(`running = false`), qemu, 1 vCPU, 64 MiB, one 16 MiB boot volume, `shutdown_timeout = \"0s\"`. "+
		"Wall clock of each terraform command (plugin start included); plans are the median of %d. "+
		"The floor is the same libvirt work with bare go-libvirt calls at the reconciler's concurrency (%d), in the same run: "+
		"create = a volume create and a define per member; read = one list, one XML read per member; "+
		"description change = one list, one description write per member; metadata change = one list, one metadata element write per member; destroy = one list of domains and one of volumes, "+
		"an undefine and a volume delete per member.\n\n",
		c.o.planReps, reconcile.DefaultWorkers)
	fmt.Fprintf(b, "terraform's fixed cost, `terraform plan` with no resources: %s with an empty configuration, %s with the provider configured "+
		"(plugin started, libvirt connected).\n\n", secs(f.empty), secs(f.providerOnly))
	b.WriteString("| members | operation | provider via CLI | floor | ratio | terraform output | note |\n")
	b.WriteString("| ---: | --- | ---: | ---: | ---: | ---: | --- |\n")
	for _, r := range results {
		for _, row := range r.rows {
			floor, ratio := "none", "—"
			if row.floor > 0 {
				floor, ratio = secs(row.floor), fmt.Sprintf("%.2fx", float64(row.cli)/float64(row.floor))
			} else if row.op == "no-op plan after the change" {
				floor = "—"
			}
			note := row.note
			if row.op == "no-op plan -refresh=false" {
				// It needs no libvirt work at all: the ratio is to terraform's own plan.
				ratio = fmt.Sprintf("%.2fx terraform's", float64(row.cli)/float64(f.providerOnly))
				note = strings.TrimPrefix(note+"; ratio to the plan with no resources", "; ")
			}
			fmt.Fprintf(b, "| %d | %s | %s | %s | %s | %s | %s |\n", r.n, row.op, secs(row.cli), floor, ratio, kib(row.outBytes), note)
		}
		if r.rssKiB > 0 {
			fmt.Fprintf(b, "| %d | provider peak RSS, no-op plan | %.1f MB | | | | max VmHWM/VmRSS of %d plugin process(es) |\n", r.n, float64(r.rssKiB)/1024, r.plugins)
		}
		if r.stateBytes > 0 {
			after := ""
			if r.stateAfter > 0 {
				after = kib(r.stateAfter) + " after the description change; "
			}
			fmt.Fprintf(b, "| %d | state file | %s | | | | %s%.0f bytes/member |\n", r.n, kib(r.stateBytes), after, float64(r.stateBytes)/float64(r.n))
		}
		if r.err != nil {
			fmt.Fprintf(b, "| %d | **FAILED** | | | | | %s |\n", r.n, oneLine(r.err.Error()))
		}
	}
	for i, r := range results {
		if len(r.neighbour) == 0 {
			continue
		}
		if i == 0 || len(results[i-1].neighbour) == 0 {
			fmt.Fprintf(b, "\n### %d running members beside the N-member group\n\n", neighbourSize)
			b.WriteString("A second group, `" + neighbourGroup + "`, with `running = true`, created, planned and changed while the N stopped members " +
				"exist on the same host: its plans read the definitions of its own members only.\n\n")
			b.WriteString("| beside N | operation | provider via CLI | note |\n| ---: | --- | ---: | --- |\n")
		}
		for _, row := range r.neighbour {
			fmt.Fprintf(b, "| %d | %s | %s | %s |\n", r.n, row.op, secs(row.cli), row.note)
		}
	}
	for _, r := range results {
		if len(r.calls) == 0 {
			continue
		}
		fmt.Fprintf(b, "\n### libvirt calls per command, N=%d\n\n", r.n)
		b.WriteString("Counted on a socket in front of libvirtd's (a second group, `" + callsGroup + "`, untimed), with `TF_LOG_PROVIDER=DEBUG`; " +
			"the debug log's backend messages are its writes and listings (per-domain reads are not logged). " +
			"Record reads / writes / engine plans are the group records read and written and the engine's plans of a group, as the provider's processes count them " +
			"(`" + reconcile.CountsMessage + "` in the debug log): the whole command (every walk: refresh, plan, apply), and of that the apply walk's process " +
			"(which plans each resource again before applying it).\n\n")
		b.WriteString("| operation | libvirt calls | per member | record reads / writes / engine plans | of which apply walk | by procedure | backend debug messages |\n| --- | ---: | ---: | ---: | ---: | --- | --- |\n")
		for _, cc := range r.calls {
			fmt.Fprintf(b, "| %s | %d | %.2f | %s | %s | %s | %s |\n", cc.op, cc.total(), float64(cc.total())/float64(r.n), cc.txn, cc.txn.applyString(), cc.breakdown(r.n), cc.logBreakdown())
		}
	}
	b.WriteString(profileReport(results))
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "|", "\\|")
	return strings.Join(strings.Fields(s), " ")
}

func kib(n int64) string {
	switch {
	case n < 0:
		return "?"
	case n < 1024:
		return fmt.Sprintf("%d B", n)
	case n < 1024*1024:
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	}
	return fmt.Sprintf("%.2f MiB", float64(n)/1024/1024)
}

func run(name string, args ...string) string {
	out, _ := exec.Command(name, args...).Output()
	return string(out)
}

func memTotal() string {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "? memory"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if fs := strings.Fields(line); len(fs) >= 2 && fs[0] == "MemTotal:" {
			k, _ := strconv.ParseFloat(fs[1], 64)
			return fmt.Sprintf("%.0f GiB", k/1024/1024)
		}
	}
	return "? memory"
}
