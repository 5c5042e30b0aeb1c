package engine

import (
	"fmt"
	"slices"
	"time"
)

// Moves between hosts (DESIGN "Moves"). A member leaves its host only by the user's explicit
// change: its host is drained (distribution_policy.drain), taken out of distribution_policy.hosts,
// or rebalance evens the spread. A move is live (libvirt's migration, its disks copied) where the
// hosts allow it, else cold: the member stops, every volume is copied and checked, the member is
// defined and started on the target, and only then is the source's copy removed. The member's
// record carries the move (ManagedInstance.Move) from before anything changes until the source's
// copy is gone, so that the next apply finishes or undoes a move that was cut off.

// LiveMoveTimeout bounds one live migration: the job is aborted when it passes, and the member
// runs on at its source.
const LiveMoveTimeout = 15 * time.Minute

// MovePhase is the part of a move an operation carries out.
type MovePhase int

const (
	// MoveStart moves a member that is on its source: copied (or migrated) to the target.
	MoveStart MovePhase = iota
	// MoveFinish ends a move whose target has the member's definition, which is made only once
	// every volume was copied and checked: the source's copy goes.
	MoveFinish
	// MoveUndo ends a move that was cut off before the target had the member's definition, when
	// the member no longer moves: what the move left on the target goes, and the member stays.
	MoveUndo
)

// MemberMove is a move the plan makes (or finishes, or undoes).
type MemberMove struct {
	Name string
	Move Move
	// Phase is the part of the move the plan carries out.
	Phase MovePhase
	// Leftover is a host where an earlier, cut-off move of the member left volumes: they go
	// first. "" when there is none.
	Leftover string
	// Power is what the member ends in: StatusRunning or StatusStopped; Running whether it runs
	// now, where it was observed.
	Power   Status
	Running bool
	// NVRAM is true for a member that may have an NVRAM volume (UEFI): it moves with it.
	NVRAM bool
}

// String is the move as a planned action shows it: "h2 -> default (cold)".
func (m Move) String() string {
	how := "cold"
	if m.Live {
		how = "live"
	}
	return fmt.Sprintf("%s -> %s (%s)", HostOf(m.From), HostOf(m.To), how)
}

// stays are the hosts members may be on: the group's hosts but those drained.
func (g Group) stays() []string {
	var out []string
	for _, h := range g.HostList() {
		if !slices.Contains(g.Drain, h) {
			out = append(out, h)
		}
	}
	return out
}

// movable says why a member cannot move, or "" when it can: a disk outside its own volumes
// (a path, or a volume its config names) is not the group's to copy or delete.
func movable(o Observed) string {
	for _, d := range o.Attached {
		if d.Source != VolumeName(o.Name, d.DeviceName) {
			return fmt.Sprintf("its disk %s is %s, which is not a volume the group made for it: the provider copies and deletes only the member's own volumes. Detach it (per-instance config) or leave the member's host in distribution_policy.hosts and out of drain", d.DeviceName, d.Source)
		}
	}
	return ""
}

// liveMove reports whether the member moves live from one host to the other: the group allows
// it, the member runs, it has no NVRAM (which a migration does not carry), and the hosts have
// known, different UUIDs (libvirt refuses to migrate between two daemons of one UUID). Whether
// the source's daemon reaches the target is known only by trying: a live move that libvirt
// refuses before the member left falls back to a cold one (TaskMigrate's Otherwise).
func liveMove(g Group, o Observed, from, to string, env Env) bool {
	if g.ColdMoves || o.Status != StatusRunning || o.Instance.Current.Firmware == FirmwareEFI {
		return false
	}
	a, b := env.HostUUIDs[HostOf(from)], env.HostUUIDs[HostOf(to)]
	return a != "" && b != "" && a != b
}

// planMoves decides the moves of the plan's members (p.Final): an interrupted move first, then
// each member on a host it may no longer be on, then, with rebalance, members from the fullest
// host to the emptiest until the spread is even. A member that moves gets only its move: any
// other change of it waits for the next apply, which plans it on its new host.
func (p *GroupPlan) planMoves(s GroupState, byName map[string]Observed, env Env) {
	g := s.Group
	stays := g.stays()
	counts := map[string]int{}
	for _, m := range p.Final {
		counts[m.Host]++
	}
	decided := map[string]MemberMove{}
	// target is the kept host that answers with the fewest members, earliest on a tie.
	target := func() string {
		best := ""
		for _, h := range stays {
			if env.answers(h) && (best == "" || counts[h] < counts[best]) {
				best = h
			}
		}
		return best
	}
	move := func(i int, o Observed, to string, leftover string) {
		m := &p.Final[i]
		from := m.Host
		if why := movable(o); why != "" {
			p.Blocked = append(p.Blocked, Blocked{Name: o.Name, Problem: fmt.Sprintf("it cannot move from host %s: %s", from, why)})
			return
		}
		if why := s.notOwnedToMove(o, from, to); why != "" {
			p.Blocked = append(p.Blocked, Blocked{Name: o.Name, Problem: why})
			return
		}
		counts[from]--
		counts[to]++
		mv := Move{From: from, To: to, Live: liveMove(g, o, from, to, env)}
		decided[o.Name] = MemberMove{Name: o.Name, Move: mv, Phase: MoveStart, Leftover: leftover}
	}
	for i := range p.Final {
		m := &p.Final[i]
		o, ok := byName[m.Name]
		if !ok || slices.Contains(p.Delete, m.Name) {
			continue
		}
		mv := o.Instance.Move
		switch {
		case o.Unknown:
			if !slices.Contains(stays, m.Host) && !p.held(m.Name) {
				// The move is pending, not gone: the plan shows it, and is not at rest.
				to := target()
				if to == "" {
					to = "a host that answers"
				}
				why := fmt.Sprintf("%s -> %s waits: host %s cannot be reached", m.Host, to, m.Host)
				m.Planned = Planned{Kind: PlannedMove, Why: why}
				p.Held = append(p.Held, HostWait{Name: m.Name, Host: m.Host, Why: "MOVE " + why})
			}
		case mv != nil && HostOf(o.Host) == HostOf(mv.To):
			// Defined on its target: the copy there was checked; the source's goes.
			decided[o.Name] = MemberMove{Name: o.Name, Move: *mv, Phase: MoveFinish}
		case !slices.Contains(stays, m.Host):
			to := target()
			if to == "" {
				m.Planned.Why = fmt.Sprintf("host %s is drained, and no host it may move to answers: it moves once one does", m.Host)
				continue
			}
			leftover := ""
			if mv != nil && HostOf(mv.To) != to {
				leftover = HostOf(mv.To)
			}
			move(i, o, to, leftover)
		case mv != nil:
			// Cut off before the target had its definition, and staying: undone.
			decided[o.Name] = MemberMove{Name: o.Name, Move: *mv, Phase: MoveUndo, Leftover: HostOf(mv.To)}
		}
	}
	if g.Rebalance {
		p.rebalance(stays, counts, byName, decided, env, move)
	}
	if len(decided) == 0 {
		return
	}
	for i := range p.Final {
		m := &p.Final[i]
		d, ok := decided[m.Name]
		if !ok {
			continue
		}
		o := byName[m.Name]
		d.Power, d.Running = StatusStopped, o.Status == StatusRunning
		if d.Running {
			d.Power = StatusRunning
		}
		var deferred string
		steps := p.Steps[:0]
		for _, st := range p.Steps {
			if st.Name != m.Name {
				steps = append(steps, st)
				continue
			}
			if st.Power != "" {
				d.Power = st.Power
			}
			if st.Changed() {
				deferred = "; its other changes (" + JoinReasons(st.Plan.Reasons) + ") follow in the next apply, on its new host"
			}
		}
		p.Steps = steps
		m.Status = d.Power
		why := d.Move.String() + movePhaseWords(d.Phase)
		if d.Phase == MoveStart && !d.Move.Live {
			// A cold move stops the member first.
			why = haltedWhy(why, o.Status)
		}
		m.Planned = Planned{Kind: PlannedMove, Why: why + deferred}
		if d.Power != o.Status && (d.Power == StatusRunning || o.Status == StatusRunning) {
			m.Planned.Then = map[Status]PlannedKind{StatusRunning: PlannedStart, StatusStopped: PlannedStop}[d.Power]
		}
		if d.Phase == MoveStart {
			m.Host = HostOf(d.Move.To)
		}
		p.Moves = append(p.Moves, d)
	}
}

// held reports whether a change of member name waits for its host (Held).
func (p *GroupPlan) held(name string) bool {
	return slices.ContainsFunc(p.Held, func(w HostWait) bool { return w.Name == name })
}

func movePhaseWords(ph MovePhase) string {
	switch ph {
	case MoveStart:
	case MoveFinish:
		return ", cut off after its copy was checked: finished"
	case MoveUndo:
		return ", cut off before its copy was checked: undone, the member stays"
	}
	return ""
}

// rebalance moves members from the fullest answering host to the emptiest until no two differ
// by more than one: the highest index first, never one that moves already, cannot be read, or
// was made or is deleted by this plan.
func (p *GroupPlan) rebalance(stays []string, counts map[string]int, byName map[string]Observed, decided map[string]MemberMove, env Env, move func(int, Observed, string, string)) {
	for range len(p.Final) {
		most, least := "", ""
		for _, h := range stays {
			if !env.answers(h) {
				continue
			}
			if most == "" || counts[h] > counts[most] {
				most = h
			}
			if least == "" || counts[h] < counts[least] {
				least = h
			}
		}
		if most == "" || counts[most]-counts[least] <= 1 {
			return
		}
		picked := -1
		for i := len(p.Final) - 1; i >= 0; i-- {
			m := p.Final[i]
			o, ok := byName[m.Name]
			if _, moving := decided[m.Name]; moving || !ok || o.Unknown || m.Host != most || slices.Contains(p.Delete, m.Name) || movable(o) != "" {
				continue
			}
			picked = i
			break
		}
		if picked < 0 {
			return
		}
		move(picked, byName[p.Final[picked].Name], least, "")
	}
}

// moveWaves adds the plan's moves, last: the ends of cut-off moves and the moves of members that
// are down in one wave, then the live moves, then the cold moves of running members, each as
// many at a time as the budget leaves once the members that stay down are counted.
func (p *GroupPlan) moveWaves(s GroupState, byName map[string]Observed, budget, room int) {
	var down, live, cold []Operation
	for _, mv := range p.Moves {
		o := byName[mv.Name]
		op := s.withTasks(moveOp(s, o, mv))
		switch {
		case mv.Phase != MoveStart || o.Status != StatusRunning:
			down = append(down, op)
		case mv.Move.Live:
			live = append(live, op)
		default:
			cold = append(cold, op)
		}
	}
	if len(down) > 0 {
		p.Waves = append(p.Waves, Wave{Ops: down})
	}
	// A live move that libvirt refuses goes on cold: live moves go as many at a time as cold
	// ones may, so that the budget holds either way.
	for ops := range slices.Chunk(live, max(room, 1)) {
		p.Waves = append(p.Waves, Wave{Ops: ops})
	}
	if room < 1 && len(cold) > 0 {
		for _, op := range cold {
			p.Blocked = append(p.Blocked, Blocked{Name: op.Name,
				Problem: fmt.Sprintf("its cold move (%s) takes it down, but max_unavailable (%d) is used up by members that are down and that this plan does not bring back", op.Move.Move, budget)})
		}
		return
	}
	for ops := range slices.Chunk(cold, max(room, 1)) {
		p.Waves = append(p.Waves, Wave{Ops: ops})
	}
}

// notOwnedToMove says why the member's volumes cannot move from one host to the other, "" when
// they can: a move copies each volume and deletes its source once the copy is checked, and the
// group deletes only what it made. A volume of the member on its host that the group did not
// make (reused under the member's name, made by hand, with no kept record that hands it to the
// group) would be left on the source, and the name taken there would refuse the move back; a
// volume of that name on the target that the group did not make would be written over. So such a
// move is refused at plan, and the plan is clean again once the change that moves the member is
// undone.
func (s GroupState) notOwnedToMove(o Observed, from, to string) string {
	if len(s.Listed) == 0 {
		return ""
	}
	for _, d := range knownVolumes(o) {
		if s.foreign(from, d.Source) {
			return fmt.Sprintf("it cannot move from host %s to host %s: its volume %s on host %s was not made by this group (reused under the member's name, or made by hand), and a move deletes the source of each volume it copies, which the group never does to a volume it did not make. Keep the member where it is (take host %s out of distribution_policy.drain, or back into distribution_policy.hosts), or move the data by hand (copy the volume to host %s and delete it on host %s, virsh vol-delete) and apply again",
				HostOf(from), HostOf(to), d.Source, HostOf(from), HostOf(from), HostOf(to), HostOf(from))
		}
		if present, known := s.Listed.present(to, d.Source); known && present && !s.Inventory.Has(to, d.Source) {
			return fmt.Sprintf("it cannot move from host %s to host %s: volume %s is already on host %s and was not made by this group, and a move never writes over a volume the group did not make. Keep the member where it is (take host %s out of distribution_policy.drain, or back into distribution_policy.hosts), or delete or rename that volume on host %s (virsh vol-delete) if it is garbage",
				HostOf(from), HostOf(to), d.Source, HostOf(to), HostOf(from), HostOf(to))
		}
	}
	return ""
}
