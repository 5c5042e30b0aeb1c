package engine

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// moveTasks renders an operation's tasks as "kind@host" ("" host: the operation's), with the
// volume of a volume task: what the tests read of a move's order.
func moveTasks(op Operation) string { return renderTasks(op.Name, op.Tasks) }

func renderTasks(name string, tasks []Task) string {
	var out []string
	for _, t := range tasks {
		s := t.Kind.String()
		if t.Volume.Volume != "" {
			s += "(" + strings.TrimPrefix(t.Volume.Volume, name+"-") + ")"
		}
		if t.Host != "" {
			s += "@" + t.Host
		}
		if len(t.Otherwise) > 0 {
			s += " [otherwise: " + renderTasks(name, t.Otherwise) + "]"
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

// waveNames renders the plan's waves as "db-1 db-2 | db-3".
func waveNames(p GroupPlan) string {
	var ws []string
	for _, w := range p.Waves {
		var names []string
		for _, op := range w.Ops {
			names = append(names, op.Kind.String()+":"+op.Name)
		}
		ws = append(ws, strings.Join(names, " "))
	}
	return strings.Join(ws, " | ")
}

func TestPlanGroup_moves(t *testing.T) {
	t.Parallel()
	two := func(size int, mutate func(*Group)) GroupState {
		s := state(group(size))
		s.Group.Hosts = []string{"h2", "default"}
		if mutate != nil {
			mutate(&s.Group)
		}
		return s
	}
	drainH2 := func(g *Group) { g.Drain = []string{"h2"} }
	spreadTwo := func(status Status) []Observed {
		return onHosts(observed(base(), status, 1, 2, 3, 4), "h2", "default", "h2", "default")
	}
	machines := Env{HostUUIDs: map[string]string{"h2": "m2", "default": "m1"}}
	moving := func(from, to string, live bool, host string, idx int) []Observed {
		o := onHosts(observed(base(), StatusStopped, idx), host)
		o[0].Instance.Move = &Move{From: from, To: to, Live: live}
		return o
	}
	tests := []struct {
		name   string
		s      GroupState
		obs    []Observed
		env    Env
		want   map[string]string // planned actions of the members named
		spread string
		waves  string
		tasks  map[string]string // tasks of the operations named
		// blocked is a part of the one Blocked entry's text, "" for none.
		blocked string
		held    string // the changes that wait for their host (Held)
	}{
		{
			name: "drain: the drained host's running members move cold, one wave each within max_unavailable 1",
			s:    two(4, drainH2), obs: spreadTwo(StatusRunning),
			want:   map[string]string{"db-1": "MOVE: h2 -> default (cold)", "db-2": "NONE", "db-3": "MOVE: h2 -> default (cold)"},
			spread: "default: db-1 db-2 db-3 db-4",
			waves:  "move:db-1 | move:db-3",
			tasks: map[string]string{"db-1": "mark name-free@default delete-volume(boot.qcow2)@default delete-volume(data.qcow2)@default " +
				"autostart shutdown [otherwise: power-off] stop-wait copy-volume(boot.qcow2)@default copy-volume(data.qcow2)@default define@default undefine " +
				"start@default delete-volume(boot.qcow2) delete-volume(data.qcow2) autostart@default record@default"},
		},
		{
			name: "a host taken out of hosts is drained too",
			s: two(4, func(g *Group) {
				g.Hosts = []string{"default"}
				g.Policy.MaxUnavailable = 2
			}), obs: spreadTwo(StatusRunning),
			spread: "default: db-1 db-2 db-3 db-4",
			waves:  "move:db-1 move:db-3",
		},
		{
			name: "hosts on two machines: the move is live, and stopped members move cold in one wave",
			s:    two(4, drainH2), env: machines,
			obs:  append(onHosts(observed(base(), StatusRunning, 1), "h2"), onHosts(observed(base(), StatusStopped, 2, 3, 4), "default", "h2", "default")...),
			want: map[string]string{"db-1": "MOVE: h2 -> default (live)", "db-3": "MOVE: h2 -> default (cold); then START"},
			// The stopped members on default are started; the stopped one on h2 moves first (it
			// costs no availability) and is started there, then the live one moves.
			waves: "power:db-2 power:db-4 | move:db-3 | move:db-1",
		},
		{
			name: "live = false: cold between two machines",
			s: two(2, func(g *Group) {
				drainH2(g)
				g.ColdMoves = true
			}), env: machines,
			obs:  onHosts(observed(base(), StatusRunning, 1, 2), "h2", "default"),
			want: map[string]string{"db-1": "MOVE: h2 -> default (cold)"},
		},
		{
			name: "a live move: empty volumes on the target, the migration (cold if libvirt refuses it), then the source's volumes go",
			s:    two(2, drainH2), env: machines,
			obs: onHosts(observed(base(), StatusRunning, 1, 2), "h2", "default"),
			tasks: map[string]string{"db-1": "mark name-free@default delete-volume(boot.qcow2)@default delete-volume(data.qcow2)@default " +
				"prepare-volume(boot.qcow2)@default prepare-volume(data.qcow2)@default migrate@default " +
				"[otherwise: name-free@default delete-volume(boot.qcow2)@default delete-volume(data.qcow2)@default autostart shutdown [otherwise: power-off] stop-wait " +
				"copy-volume(boot.qcow2)@default copy-volume(data.qcow2)@default define@default undefine start@default] " +
				"delete-volume(boot.qcow2) delete-volume(data.qcow2) autostart@default record@default"},
		},
		{
			name: "the drained host cannot be reached: its members stay, UNKNOWN, unmoved",
			s:    two(2, drainH2), env: Env{Down: []string{"h2"}},
			obs:    []Observed{{Name: "db-1", Index: 1, Host: "h2", Unknown: true, Status: StatusUnknown}, onHosts(observed(base(), StatusRunning, 2), "default")[0]},
			want:   map[string]string{"db-1": "MOVE: h2 -> default waits: host h2 cannot be reached"},
			held:   "db-1: MOVE h2 -> default waits: host h2 cannot be reached",
			spread: "default: db-2 | h2: db-1",
			waves:  "",
		},
		{
			name: "cut off before the target had its definition, still drained: moved again, the target cleared first",
			s:    two(2, drainH2), obs: append(moving("h2", "default", false, "h2", 1), onHosts(observed(base(), StatusRunning, 2), "default")...),
			want: map[string]string{"db-1": "MOVE: h2 -> default (cold); then START"},
			tasks: map[string]string{"db-1": "mark name-free@default delete-volume(boot.qcow2)@default delete-volume(data.qcow2)@default " +
				"autostart shutdown [otherwise: power-off] stop-wait copy-volume(boot.qcow2)@default copy-volume(data.qcow2)@default define@default undefine " +
				"start@default delete-volume(boot.qcow2) delete-volume(data.qcow2) autostart@default record@default"},
		},
		{
			name: "cut off before the target had its definition, drain taken back: undone",
			s:    two(2, nil), obs: append(moving("h2", "default", false, "h2", 1), onHosts(observed(base(), StatusRunning, 2), "default")...),
			want:   map[string]string{"db-1": "MOVE: h2 -> default (cold), cut off before its copy was checked: undone, the member stays; then START"},
			spread: "default: db-2 | h2: db-1",
			tasks: map[string]string{"db-1": "name-free@default delete-volume(boot.qcow2)@default delete-volume(data.qcow2)@default " +
				"record autostart start"},
		},
		{
			name: "defined on its target: finished, whatever the configuration says now",
			s:    two(2, nil), obs: append(moving("h2", "default", false, "default", 1), onHosts(observed(base(), StatusRunning, 2), "default")...),
			want:   map[string]string{"db-1": "MOVE: h2 -> default (cold), cut off after its copy was checked: finished; then START"},
			spread: "default: db-1 db-2",
			tasks:  map[string]string{"db-1": "undefine-copy@h2 delete-volume(boot.qcow2)@h2 delete-volume(data.qcow2)@h2 autostart start record"},
		},
		{
			name: "cut off, and now drained towards another host: what the first target has is cleared too",
			s: func() GroupState {
				s := two(2, func(g *Group) { g.Hosts, g.Drain = []string{"h2", "default", "h3"}, []string{"h2", "default"} })
				return s
			}(),
			obs:  append(moving("h2", "default", false, "h2", 1), onHosts(observed(base(), StatusStopped, 2), "h3")...),
			want: map[string]string{"db-1": "MOVE: h2 -> h3 (cold); then START"},
			tasks: map[string]string{"db-1": "mark name-free@default delete-volume(boot.qcow2)@default delete-volume(data.qcow2)@default " +
				"name-free@h3 delete-volume(boot.qcow2)@h3 delete-volume(data.qcow2)@h3 autostart shutdown [otherwise: power-off] stop-wait " +
				"copy-volume(boot.qcow2)@h3 copy-volume(data.qcow2)@h3 define@h3 undefine start@h3 delete-volume(boot.qcow2) delete-volume(data.qcow2) autostart@h3 record@h3"},
		},
		{
			name: "rebalance after a host is added: the highest indices move until the spread is even",
			s: func() GroupState {
				s := state(group(4))
				s.Group.Hosts, s.Group.Rebalance, s.Group.Policy.MaxUnavailable = []string{"default", "h3"}, true, 2
				return s
			}(),
			obs:    onHosts(observed(base(), StatusRunning, 1, 2, 3, 4), "default", "default", "default", "default"),
			spread: "default: db-1 db-2 | h3: db-3 db-4",
			waves:  "move:db-3 move:db-4",
		},
		{
			name: "without rebalance a new host only takes new members",
			s: func() GroupState {
				s := state(group(5))
				s.Group.Hosts = []string{"default", "h3"}
				return s
			}(),
			obs:    onHosts(observed(base(), StatusRunning, 1, 2, 3, 4), "default", "default", "default", "default"),
			spread: "default: db-1 db-2 db-3 db-4 | h3: +db-5",
			waves:  "create:db-5",
		},
		{
			name: "a drained host takes no new member",
			s:    two(3, drainH2), obs: onHosts(observed(base(), StatusRunning, 1), "default"),
			spread: "default: db-1 +db-2 +db-3",
		},
		{
			name: "a moving member gets only its move: its template change waits for the next apply",
			s: two(1, func(g *Group) {
				drainH2(g)
				g.Template.VCPU = 2
			}),
			obs:  onHosts(observed(base(), StatusRunning, 1), "h2"),
			want: map[string]string{"db-1": "MOVE: h2 -> default (cold); its other changes (vcpu 1 -> 2) follow in the next apply, on its new host"},
		},
		{
			name: "a disk that is not the member's own volume cannot be moved",
			s:    two(1, drainH2),
			obs: func() []Observed {
				o := onHosts(observed(base(), StatusRunning, 1), "h2")
				o[0].Attached = []DesiredDisk{{DeviceName: "boot", Source: "db-1-boot.qcow2"}, {DeviceName: "extra", Source: "/srv/user.img"}}
				return o
			}(),
			blocked: "it cannot move from host h2: its disk extra is /srv/user.img",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := PlanGroup(tt.s, tt.obs, tt.env)
			if (len(p.Moves) > 0 || len(p.Held) > 0) && p.Idle() {
				t.Errorf("a plan with moves is idle")
			}
			var held []string
			for _, w := range p.Held {
				held = append(held, w.String())
			}
			if got := strings.Join(held, "; "); got != tt.held {
				t.Errorf("held\n got %s\nwant %s", got, tt.held)
			}
			got := map[string]string{}
			for _, m := range p.Final {
				if _, ok := tt.want[m.Name]; ok {
					got[m.Name] = m.Planned.String()
				}
			}
			if tt.want != nil {
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("planned actions (-want +got):\n%s", diff)
				}
			}
			if tt.spread != "" {
				if s := spread(p); s != tt.spread {
					t.Errorf("spread\n got %s\nwant %s", s, tt.spread)
				}
			}
			if tt.waves != "" || tt.name == "the drained host cannot be reached: its members stay, UNKNOWN, unmoved" {
				if w := waveNames(p); w != tt.waves {
					t.Errorf("waves\n got %s\nwant %s", w, tt.waves)
				}
			}
			for _, w := range p.Waves {
				for _, op := range w.Ops {
					if want, ok := tt.tasks[op.Name]; ok {
						if got := moveTasks(op); got != want {
							t.Errorf("tasks of %s\n got %s\nwant %s", op.Name, got, want)
						}
					}
					if op.Kind == OpMove && op.Move.Phase == MoveStart && p.Placement[op.Name] != op.Move.Move.From {
						t.Errorf("%s moves from %s, but the record places it on %s while it moves", op.Name, op.Move.Move.From, p.Placement[op.Name])
					}
				}
			}
			switch {
			case tt.blocked == "" && len(p.Blocked) > 0:
				t.Errorf("blocked: %v", p.Blocked)
			case tt.blocked != "" && (len(p.Blocked) != 1 || !strings.Contains(p.Blocked[0].String(), tt.blocked)):
				t.Errorf("blocked %v, want one with %q", p.Blocked, tt.blocked)
			}
		})
	}
}

// A move's target copy is the member, whichever host is listed first; the source's copy is a
// duplicate left to the move's end.
func TestClassify_moveTargetIsTheMember(t *testing.T) {
	t.Parallel()
	s := state(group(1))
	listing := []Listed{
		{Name: "db-1", Host: "h2", Recorded: true, Group: "db", Index: 1, MoveTo: "default"},
		{Name: "db-1", Host: "default", Recorded: true, Group: "db", Index: 1, MoveTo: "default"},
	}
	got := s.Classify(listing)
	if got[0].Membership != MembershipDuplicate || got[1].Membership != MembershipManaged {
		t.Fatalf("memberships %v %v, want the target's copy (default) the member", got[0].Membership, got[1].Membership)
	}
	// Without the move, the first host's copy is the member, as before.
	listing[0].MoveTo, listing[1].MoveTo = "", ""
	got = s.Classify(listing)
	if got[0].Membership != MembershipManaged || got[1].Membership != MembershipDuplicate {
		t.Fatalf("memberships %v %v, want the first host's copy the member", got[0].Membership, got[1].Membership)
	}
}
