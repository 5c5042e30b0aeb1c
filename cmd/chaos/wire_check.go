package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
)

// view is what the two hosts hold of the wire group, through the harness's direct connections.
func (wr *wirer) view() (hostsView, []string) {
	ctx, cancel := withTimeout(3 * time.Minute)
	defer cancel()
	v := hostsView{doms: map[string]map[string]backend.Domain{}, vols: map[string]map[string]string{}}
	var errs []string
	for _, h := range wireHosts {
		v.doms[h], v.vols[h] = map[string]backend.Domain{}, map[string]string{}
		b := wr.hosts[h].conn()
		doms, err := b.ListDomains(ctx, wireGroup+"-")
		if err != nil {
			errs = append(errs, fmt.Sprintf("list domains of %s: %v", h, err))
		}
		for _, d := range doms {
			v.doms[h][d.Name] = d
		}
		vols, err := b.ListVolumes(ctx, wr.c.pool, wireGroup+"-")
		if err != nil {
			errs = append(errs, fmt.Sprintf("list volumes of %s: %v", h, err))
		}
		for _, vol := range vols {
			v.vols[h][vol.Name] = vol.Path
		}
	}
	return v, errs
}

// check inspects the group on both hosts: members 1..size each defined on one host, the one not
// drained, and running; no other domain; no volume of the group on a host where its member is
// not defined, but for the data disk NEVER keeps of a member scaled in; every data disk's bytes
// as written.
func (wr *wirer) check(string) checkResult {
	var r checkResult
	v, errs := wr.view()
	r.errs = append(r.errs, errs...)
	members := map[string]bool{}
	for i := 1; i <= wr.size; i++ {
		members[wireMember(i)] = true
	}
	for _, h := range wireHosts {
		for name, d := range v.doms[h] {
			if !members[name] {
				r.orphanDomains = append(r.orphanDomains, fmt.Sprintf("%s on %s (%s)", name, h, d.Status))
			}
		}
		for name := range v.vols[h] {
			owner := ""
			for i := 1; i <= wireMaxSize; i++ {
				if strings.HasPrefix(name, wireMember(i)+"-") {
					owner = wireMember(i)
				}
			}
			_, defined := v.doms[h][owner]
			switch {
			case owner == "":
				r.orphanVolumes = append(r.orphanVolumes, fmt.Sprintf("%s on %s (no member's)", name, h))
			case !members[owner] && name == dataVolume(owner):
				// Kept by NEVER while its member is scaled in; reused when it comes back.
			case !defined:
				r.orphanVolumes = append(r.orphanVolumes, fmt.Sprintf("%s on %s, where %s is not defined", name, h, owner))
			}
		}
	}
	if len(errs) == 0 {
		for i := 1; i <= wr.size; i++ {
			m := wireMember(i)
			defined, running := v.definedOn(wireHosts, m)
			switch {
			case len(defined) == 0:
				r.down = append(r.down, m+" has no domain")
			case len(defined) > 1:
				r.doubles = append(r.doubles, fmt.Sprintf("%s: defined on %s", m, strings.Join(defined, " and ")))
			case defined[0] == wr.drain:
				r.misplaced = append(r.misplaced, fmt.Sprintf("%s is on %s, which the configuration drains", m, defined[0]))
			}
			if len(defined) > 0 && len(running) == 0 {
				r.down = append(r.down, m+" is not running")
			}
		}
	}
	for i := 1; i <= wireMaxSize; i++ {
		name := dataVolume(wireMember(i))
		var where []string
		for _, h := range wireHosts {
			if _, ok := v.vols[h][name]; ok {
				where = append(where, h)
			}
		}
		if len(errs) > 0 {
			continue
		}
		switch {
		case len(where) == 0:
			if wr.sums[name] != "" {
				r.lost = append(r.lost, name+" is gone")
				wr.sums[name] = ""
			}
			continue
		case len(where) > 1:
			// A move that was cut off may leave a copy on its target; the check of orphans
			// above names the one whose member is not there.
			continue
		}
		sum, _, err := checksum(v.vols[where[0]][name], wr.c.scratch)
		switch {
		case err != nil:
			r.errs = append(r.errs, err.Error())
		case wr.sums[name] == "":
			wr.sums[name] = sum
		case sum != wr.sums[name]:
			r.lost = append(r.lost, fmt.Sprintf("%s on %s has checksum %.12s…, had %.12s…", name, where[0], sum, wr.sums[name]))
			wr.sums[name] = sum
		}
	}
	slices.Sort(r.orphanVolumes)
	slices.Sort(r.orphanDomains)
	slices.Sort(r.down)
	return r
}
