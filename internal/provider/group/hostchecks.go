package group

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/diagnostics"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// checkLimits refuses vCPUs and memory beyond what host allows a domain of that type.
func checkLimits(ctx context.Context, diags *diag.Diagnostics, b backend.Host, host, domainType string, vcpu, memoryMiB int64, vcpuPath, memoryPath path.Path) {
	l, err := b.Limits(ctx, domainType)
	if err != nil {
		diags.AddError("Cannot read the host's limits", fmt.Sprintf("%s, domain type %q: %s", providerdata.OnHost(host), domainType, err))
		return
	}
	if vcpu > l.MaxVCPU {
		diags.AddAttributeError(vcpuPath, "Too many vCPUs", fmt.Sprintf("vcpu = %d, but a %s domain on this host has at most %d (%s). Use %d or fewer.", vcpu, domainType, l.MaxVCPU, providerdata.OnHost(host), l.MaxVCPU))
	}
	if memoryMiB > l.MemoryMiB {
		diags.AddAttributeError(memoryPath, "More memory than the host has", fmt.Sprintf("memory_mib = %d, but the host has %d MiB in all (%s). Use %d or less.", memoryMiB, l.MemoryMiB, providerdata.OnHost(host), l.MemoryMiB))
	}
}

// checkHostKVM warns when the members' domain type is kvm on a host whose KVM cannot run guests
// (engine.HostVirt.KVMCannotRun). A warning, not an error: see diagnostics.KVMCannotRunGuests. A
// host whose capabilities cannot be read is left to the checks that need them.
func checkHostKVM(ctx context.Context, diags *diag.Diagnostics, b backend.Host, host, domainType string, at path.Path) {
	if domainType != engine.DomainTypeKVM {
		return
	}
	if v, err := b.HostVirt(ctx); err == nil && v.KVMCannotRun() {
		diags.Append(diagnostics.KVMCannotRunGuests(at, providerdata.OnHost(host)))
	}
}

// CheckGroupHost checks the group's plan against the hosts its members are or will be on: the
// group's hosts and those its members are on now. On create everything is checked, and on a
// host new to the group; on update what changed (a host that changed behind Terraform's back
// must not block an unrelated change, such as a scale-in). A host of the group that does not
// answer is not checked: its members are UNKNOWN and left as they are, no new member is placed
// there, and the plan warns about it (warnHostsDown).
func (r *StatefulGroupResource) CheckGroupHost(ctx context.Context, diags *diag.Diagnostics, plan, prior *StatefulGroupModel) {
	t := plan.Template
	var pt *TemplateModel
	if prior != nil {
		pt = prior.Template
	}
	tp := path.Root("template")
	if !r.checkHosts(ctx, diags, plan, prior) {
		return
	}
	poolOK := true
	if providerdata.Known(plan.Pool) && prior == nil {
		poolOK = r.Data.CheckPool(ctx, diags, engine.DefaultHost, path.Root("pool"), plan.Pool.ValueString())
	}
	// The group's domain type, when unset, is the default host's (the apply resolves it there):
	// every host must run it. When the default host's KVM cannot run guests, the unset type is
	// qemu, and the plan says why.
	domainType := ""
	if providerdata.Known(t.DomainType) && !t.DomainType.IsNull() {
		domainType = t.DomainType.ValueString()
	}
	resolveDomainType := func() bool {
		if domainType != "" {
			return true
		}
		hctx, cancel := reconcile.HostContext(ctx)
		defer cancel()
		v, err := r.Data.DefaultHost().HostVirt(hctx)
		if err != nil {
			err = reconcile.HostErr(ctx, hctx, engine.DefaultHost, err)
			diags.Append(diagnostics.HostDomainType(err))
			return false
		}
		domainType = v.DefaultDomainType()
		if v.KVMCannotRun() {
			diags.Append(diagnostics.KVMDefaultedToQEMU(tp.AtName("domain_type"), providerdata.OnHost(engine.DefaultHost)))
		}
		return true
	}
	hosts, before := r.memberHosts(ctx, diags, plan, prior)
	for _, h := range hosts {
		b, err := r.Data.Host(h)
		if err != nil {
			continue // checkHosts refused the name
		}
		// Each host's checks are one reading of it, under the plan's host bound.
		ctx, cancel := reconcile.HostContext(ctx)
		defer cancel() //nolint:gocritic // one bound per host, a few hosts, all ended when the check returns
		// Everything is checked on a host new to the group: none of it was checked there.
		fresh := prior == nil || pt == nil || !slices.Contains(before, h)
		changed := func(now, before attr.Value) bool { return fresh || !now.Equal(before) }
		var networks []int
		for i, n := range t.NetworkInterface {
			if !providerdata.Known(n.Type, n.Network) || n.Type.ValueString() != "network" || n.Network.ValueString() == "" {
				continue
			}
			if !fresh && i < len(pt.NetworkInterface) && !changed(n.Network, pt.NetworkInterface[i].Network) {
				continue
			}
			networks = append(networks, i)
		}
		bd := t.BootDisk
		image := bd != nil && providerdata.Known(bd.SourceImage, bd.SizeMiB, plan.Pool) && !bd.SourceImage.IsNull() && poolOK
		if image && !fresh && pt.BootDisk != nil {
			image = changed(bd.SourceImage, pt.BootDisk.SourceImage) || changed(bd.SizeMiB, pt.BootDisk.SizeMiB)
		}
		limits := providerdata.Known(t.VCPU, t.MemoryMiB) && (fresh || changed(t.VCPU, pt.VCPU) || changed(t.MemoryMiB, pt.MemoryMiB) || changed(t.DomainType, pt.DomainType))
		firmware := t.firmwareKnown() && providerdata.Known(plan.Pool) && (fresh || firmwareChanged(t, pt))
		// Whether the host's KVM can run the members: judged where they are new or their
		// domain type changes, so that a group that already runs is not warned at every plan.
		kvm := fresh || changed(t.DomainType, pt.DomainType)
		var priorT *TemplateModel
		if !fresh {
			priorT = pt
		}
		tpm := tpmDue(t, priorT)
		if len(networks) == 0 && !image && !limits && !firmware && !kvm && !tpm {
			continue
		}
		if !fresh && h != engine.DefaultHost && !providerdata.Answers(ctx, b, plan.Pool) {
			continue
		}
		for _, i := range networks {
			providerdata.CheckNetwork(ctx, diags, b, h, tp.AtName("network_interface").AtListIndex(i).AtName("network"), t.NetworkInterface[i].Network.ValueString())
		}
		for i, n := range t.NetworkInterface {
			// Checked when its network is, or when the address is new or changed.
			due := slices.Contains(networks, i) || fresh || i >= len(pt.NetworkInterface) || changed(n.Address, pt.NetworkInterface[i].Address)
			if !providerdata.Known(n.Address) || n.Address.IsNull() || !due {
				continue
			}
			providerdata.CheckReservable(ctx, diags, b, h, tp.AtName("network_interface").AtListIndex(i).AtName("address"), i, n.Network.ValueString())
		}
		if image {
			p := tp.AtName("boot_disk")
			info := providerdata.CheckSource(ctx, diags, b, h, p.AtName("source_image"), "source_image", plan.Pool.ValueString(), bd.SourceImage.ValueString(), r.Data.AllowHostPaths)
			if info != nil && uint64(bd.SizeMiB.ValueInt64())<<20 < info.CapacityBytes {
				need := (info.CapacityBytes + 1<<20 - 1) >> 20
				diags.AddAttributeError(p.AtName("size_mib"), "Boot disk smaller than its image",
					fmt.Sprintf("size_mib = %d, but source_image %q has a virtual size of %d MiB on %s: a boot disk cannot be smaller than its image. Use size_mib = %d or more.", bd.SizeMiB.ValueInt64(), bd.SourceImage.ValueString(), need, providerdata.OnHost(h), need))
			}
		}
		if kvm {
			if !resolveDomainType() {
				return
			}
			checkHostKVM(ctx, diags, b, h, domainType, tp.AtName("domain_type"))
		}
		if limits {
			if !resolveDomainType() {
				return
			}
			checkLimits(ctx, diags, b, h, domainType, t.VCPU.ValueInt64(), t.MemoryMiB.ValueInt64(), tp.AtName("vcpu"), tp.AtName("memory_mib"))
		}
		if firmware {
			if !resolveDomainType() {
				return
			}
			var et engine.Template
			t.setFirmware(&et)
			checkHostFirmware(ctx, diags, b, h, domainType, et, r.Data.PoolIsDir(ctx, b, h, plan.Pool.ValueString()))
		}
		if tpm {
			if !resolveDomainType() {
				return
			}
			checkHostTPM(ctx, diags, b, h, domainType, t.Machine.ValueString(), *t.TPM.engineTPM())
		}
	}
}

// checkDrain refuses a drain name that is no host of the provider (names), in the words of the
// same check of hosts, and a drain that leaves none of hosts (the default host when nil) for the
// members to move to. The list's own validators refuse a name given twice.
func checkDrain(diags *diag.Diagnostics, hosts, drain, names []string) bool {
	at := path.Root("distribution_policy").AtName("drain")
	ok := true
	for i, h := range drain {
		if !slices.Contains(names, h) {
			diags.Append(diagnostics.UnknownHost(at.AtListIndex(i), fmt.Sprintf("distribution_policy.drain[%d]", i), h, names))
			ok = false
		}
	}
	given := providerdata.QuoteList(hosts)
	if len(hosts) == 0 {
		hosts = []string{engine.DefaultHost}
		given = `left out: "default" alone`
	}
	if len(drain) > 0 && !slices.ContainsFunc(hosts, func(h string) bool { return !slices.Contains(drain, h) }) {
		diags.AddAttributeError(at, "Every host of the group drained",
			fmt.Sprintf("distribution_policy.drain = %s drains every host of distribution_policy.hosts (%s): its members would have no host to move to. At least one host of hosts must stay undrained: take a host out of drain, or add a host to hosts.", providerdata.QuoteList(drain), given))
		ok = false
	}
	return ok
}

// memberHosts are the hosts the group's members will be on: those of the plan's distribution
// (the default host without one) that it does not drain. New members go there, and so do the
// members that move: those of a drained host or of a host left out of hosts, which get only
// their move there and nothing of the plan on the host they leave. before are the hosts the
// group had: its prior distribution but the hosts it drained, and where its members were, so a
// host the group drained and takes back is checked as a new one.
func (r *StatefulGroupResource) memberHosts(ctx context.Context, diags *diag.Diagnostics, plan, prior *StatefulGroupModel) (hosts, before []string) {
	add := func(list []string, hs ...string) []string {
		for _, h := range hs {
			if h = engine.HostOf(h); !slices.Contains(list, h) {
				list = append(list, h)
			}
		}
		return list
	}
	targets := func(m *StatefulGroupModel) []string {
		hs := add(nil, m.hosts(ctx, diags)...)
		if len(hs) == 0 {
			hs = []string{engine.DefaultHost}
		}
		drained := m.drained(ctx, diags)
		return slices.DeleteFunc(hs, func(h string) bool { return slices.Contains(drained, h) })
	}
	// Only the provider's hosts can be checked; checkHosts refuses the others in the plan.
	names := r.Data.Reconciler.HostNames()
	hosts = slices.DeleteFunc(targets(plan), func(h string) bool { return !slices.Contains(names, h) })
	if prior == nil {
		return hosts, nil
	}
	before = targets(prior)
	var ignored diag.Diagnostics // an unreadable list only leaves its hosts out
	for _, row := range instanceRows(prior.Instances, &ignored) {
		before = add(before, row.Host)
	}
	return hosts, before
}

// checkHosts refuses a distribution_policy host that no provider host block names, a drain that
// does not fit the hosts (checkDrain), and checks that the group's pool runs on each host the
// plan adds. A host the group already uses is not read: one that does not answer must not block a
// change, its members are UNKNOWN instead.
func (r *StatefulGroupResource) checkHosts(ctx context.Context, diags *diag.Diagnostics, plan, prior *StatefulGroupModel) bool {
	if plan.Distribution == nil || !providerdata.Known(plan.Distribution.Hosts) {
		return true
	}
	hosts := plan.hosts(ctx, diags)
	if providerdata.Known(plan.Distribution.Drain) && !checkDrain(diags, hosts, plan.drained(ctx, diags), r.Data.Reconciler.HostNames()) {
		return false
	}
	var before []string
	if prior != nil {
		before = prior.hosts(ctx, diags)
		if len(before) == 0 {
			before = []string{engine.DefaultHost}
		}
	}
	at := path.Root("distribution_policy").AtName("hosts")
	names := r.Data.Reconciler.HostNames()
	ok := true
	for i, h := range hosts {
		if !slices.Contains(names, h) {
			diags.Append(diagnostics.UnknownHost(at.AtListIndex(i), fmt.Sprintf("distribution_policy.hosts[%d]", i), h, names))
			ok = false
		}
	}
	if !ok || !providerdata.Known(plan.Pool) {
		return ok
	}
	pool := plan.Pool.ValueString()
	for i, h := range hosts {
		if h == engine.DefaultHost || slices.Contains(before, h) {
			continue // the default host's pool is checked with the pool attribute
		}
		if r.Data.PoolPlanned(h, pool) {
			continue // a virt_pool of this configuration makes it there (providerdata/pool_plans.go)
		}
		b, err := r.Data.Host(h)
		if err != nil {
			continue // refused above, by its name
		}
		hctx, cancel := reconcile.HostContext(ctx)
		info, err := b.LookupPool(hctx, pool)
		err = reconcile.HostErr(ctx, hctx, h, err)
		cancel()
		switch {
		case errors.Is(err, backend.ErrNotFound):
			diags.AddAttributeError(at.AtListIndex(i), "Storage pool not found on host",
				fmt.Sprintf("pool %q does not exist on host %q: every host of a group needs the group's pool. Create it there (`virsh -c <its uri> pool-define-as ...`), or leave the host out.", pool, h))
			ok = false
		case err != nil:
			diags.AddAttributeError(at.AtListIndex(i), "Cannot check the storage pool on host", fmt.Sprintf("host %q: %s", h, err))
			ok = false
		case !info.Active:
			diags.AddAttributeError(at.AtListIndex(i), "Storage pool not running on host",
				fmt.Sprintf("pool %q exists on host %q but is not active. Start it there with `virsh pool-start %s`.", pool, h, pool))
			ok = false
		}
	}
	return ok
}

// checkConsoleLogDir checks console_log_dir on every host of the group that the plan could put
// a member on: all of them when the directory is new or changed, else only the hosts the plan
// adds (a host that changed behind Terraform's back must not block an unrelated change).
func (r *StatefulGroupResource) checkConsoleLogDir(ctx context.Context, diags *diag.Diagnostics, plan, prior *StatefulGroupModel) {
	t := plan.Template
	if t == nil || !providerdata.Known(t.ConsoleLogDir) || t.ConsoleLogDir.ValueString() == "" {
		return
	}
	hosts := plan.hosts(ctx, diags)
	if len(hosts) == 0 {
		hosts = []string{engine.DefaultHost}
	}
	var before []string
	if prior != nil && prior.Template != nil && prior.Template.ConsoleLogDir.Equal(t.ConsoleLogDir) {
		if before = prior.hosts(ctx, diags); len(before) == 0 {
			before = []string{engine.DefaultHost}
		}
	}
	at := path.Root("template").AtName("console_log_dir")
	dir := t.ConsoleLogDir.ValueString()
	for _, h := range hosts {
		if slices.Contains(before, h) {
			continue
		}
		b, err := r.Data.Host(h)
		if err != nil {
			continue // an unknown host name is refused with distribution_policy.hosts
		}
		facts := providerdata.HostFactsOf(b)
		j := providerdata.ConsoleLogDirProblem(dir, r.Data.AllowHostPaths, facts)
		switch {
		case j.Problem != "":
			diags.AddAttributeError(at, "Invalid console_log_dir", fmt.Sprintf("console_log_dir on host %s: %s.", h, j.Problem))
		case j.Unseen:
			summary, detail := providerdata.UnseenWarning("console_log_dir", dir, facts.Name)
			diags.AddAttributeWarning(at, summary, detail)
		}
	}
}
