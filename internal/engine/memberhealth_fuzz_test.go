package engine

import (
	"testing"
	"time"
)

// healthScenario builds a group of four members from fuzz bytes: their status, their probes'
// outcome, their record's creation and heal times, and the group's health check, auto_healing and
// failed_instance_preservation.
func healthScenario(data []byte) (GroupState, []Observed) {
	next := func() byte {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return b
	}
	g := group(4)
	flags := next()
	if flags&1 != 0 {
		g.HealthCheck = &HealthCheck{HealthyThreshold: int(next()%3) + 1, UnhealthyThreshold: int(next()%3) + 1}
	}
	if flags&2 != 0 {
		g.AutoHealing = &AutoHealing{InitialDelay: []string{"0s", "60s", "120s"}[next()%3], Backoff: []string{"0s", "60s"}[next()%2], MaxConsecutiveFailures: int(next()%3) + 1}
	}
	if flags&4 != 0 {
		g.FailedPreservation = &FailedPreservation{AutoPreserveFailedMax: int(next() % 3), PreserveTimeout: "1h"}
	}
	obs := observed(base(), StatusRunning, 1, 2, 3, 4)
	for i := range obs {
		o := &obs[i]
		kind := next()
		switch kind % 5 {
		case 1:
			o.Status, o.StateReason = StatusStopped, StateReasonCrashed
		case 2:
			o.Status, o.StateReason = StatusStopped, StateReasonShutDown
		case 3:
			o.Missing = []string{VolumeName(o.Name, "data")}
		}
		o.Instance.Created = ago(time.Duration(next()%5) * time.Minute)
		if h := int(next() % 4); h > 0 {
			o.Instance.Heals, o.Instance.LastHeal = h, ago(time.Duration(next()%8)*time.Minute)
		}
		switch p := next(); p % 4 {
		case 0:
		case 1:
			o.Probe = &ProbeOutcome{Err: "connection reset"}
		default:
			out := &ProbeOutcome{Unfinished: p&0x80 != 0}
			for n := int(next() % 4); n > 0; n-- {
				r := next()
				out.Results = append(out.Results, ProbeResult{OK: r&1 != 0, Reason: map[bool]string{true: "", false: "exit status 1"}[r&1 != 0]})
			}
			o.Probe = out
		}
	}
	return state(g), obs
}

// FuzzHealth checks, for random groups and probe outcomes:
//   - a member is HEALTHY exactly when it has no reason, STARTING only with auto_healing, and has
//     consecutive failures only from its probe's results;
//   - autohealing repairs only FAILED or UNHEALTHY members (never a HEALTHY, STARTING or UNKNOWN
//     one, nor a preserved one), and only with auto_healing set;
//   - an UNHEALTHY member's first consecutive repair is a RESTART and every later one a REPLACE
//     (the scenarios have no drift that would need more);
//     a FAILED member's is always a REPLACE;
//   - a member the plan leaves alone shows the health HealthOf judges.
func FuzzHealth(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0x03, 1, 2, 0, 0, 0, 2, 0, 0, 2, 2, 0, 1, 0, 3, 0x82, 1, 0, 4, 1, 2, 1, 1, 2, 3, 0, 0, 1, 3, 0})
	f.Add([]byte{0x07, 0, 0, 1, 1, 0, 1, 0, 2, 0, 3, 2, 0, 0, 3, 3, 0, 0, 0, 2, 1, 1, 0, 2, 3, 0, 2, 2, 0, 0, 0})
	f.Add([]byte{0x01, 2, 2, 0, 4, 0, 0, 3, 0x83, 2, 0, 0, 0, 3, 0, 1, 0, 0, 2, 0, 4, 0, 2, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		s, obs := healthScenario(data)
		g := s.Group
		judged := map[string]MemberHealth{}
		for _, o := range obs {
			mh := g.HealthOf(o, healthNow)
			judged[o.Name] = mh
			if (mh.Health == HealthHealthy) != (mh.Reason == "") {
				t.Fatalf("%s: %+v: HEALTHY exactly when there is no reason", o.Name, mh)
			}
			if mh.Health == HealthStarting && g.AutoHealing == nil {
				t.Fatalf("%s: STARTING without auto_healing", o.Name)
			}
			if mh.ConsecutiveFailures > 0 && (o.Probe == nil || len(o.Probe.Results) < mh.ConsecutiveFailures) {
				t.Fatalf("%s: %d consecutive failures from %+v", o.Name, mh.ConsecutiveFailures, o.Probe)
			}
		}
		p := PlanGroup(s, obs, Env{Now: healthNow})
		stepped := map[string]bool{}
		for _, st := range p.Steps {
			stepped[st.Name] = true
			if st.Heal == 0 {
				continue
			}
			mh := judged[st.Name]
			switch {
			case g.AutoHealing == nil:
				t.Fatalf("%s: healed without auto_healing", st.Name)
			case p.Preservation[st.Name].Preserved():
				t.Fatalf("%s: healed while preserved", st.Name)
			case mh.Health == HealthUnhealthy && (st.Action == ActionRestart) != (st.Heal == 1):
				t.Fatalf("%s: UNHEALTHY, repair %d is %s", st.Name, st.Heal, st.Action)
			case mh.Health == HealthFailed && st.Action != ActionReplace:
				t.Fatalf("%s: FAILED, repaired by %s", st.Name, st.Action)
			case mh.Health != HealthUnhealthy && mh.Health != HealthFailed:
				t.Fatalf("%s: %s (%s) is healed", st.Name, mh.Health, mh.Reason)
			}
		}
		for _, m := range p.Final {
			if !stepped[m.Name] && m.Health != judged[m.Name].Health {
				t.Fatalf("%s: left alone, shown %s, judged %s", m.Name, m.Health, judged[m.Name].Health)
			}
		}
	})
}
