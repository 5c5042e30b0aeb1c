package engine

// Released is what the stateful policy and the configs preserved before they were changed or
// removed, since the group resource's own apply last finished (Applied), tagged with the run of
// the latest release.
//
// It protects the permanent deletions of that run, and the group's own destroy whatever run
// makes it. A `terraform destroy` cut off after the policy's destroy and before the group's had
// finished leaves the policy gone; the destroy run again must still keep what the policy
// preserved when the first began.
type Released struct {
	Run     string                 `json:"run"`
	Policy  Policy                 `json:"stateful_policy"`
	Configs map[string]ConfigEntry `json:"per_instance_configs,omitempty"`
}

// Release remembers what the policy and the configs preserve now, before a change to either,
// for the rest of the run. Terraform destroys a group's policy and configs before the group, so
// without this a `terraform destroy` would make every preserved disk stateless just before the
// group's destroy deleted them. A removal still makes the disks stateless at once; only the
// permanent deletions of the same run keep honouring the rules that held when it began. A
// device released under both rules keeps the more protective NEVER.
//
// What an earlier run released is kept, not started over: a policy's destroy cut off after it
// wrote the record leaves the policy out of the record but in Terraform's state, and the destroy
// run again finds nothing left to release.
func (s *GroupState) Release(run string) {
	if s.Released == nil {
		s.Released = &Released{}
	}
	r := s.Released
	r.Run = run
	for _, d := range s.StatefulPolicy().Disks {
		r.Policy.Disks = mergePolicyDisk(r.Policy.Disks, d)
	}
	for name, c := range s.Configs {
		if r.Configs == nil {
			r.Configs = map[string]ConfigEntry{}
		}
		kept := r.Configs[name]
		for _, d := range c.Config.Disks {
			kept.Config.Disks = mergeConfigDisk(kept.Config.Disks, d)
		}
		r.Configs[name] = kept
	}
}

func mergePolicyDisk(disks []PolicyDisk, d PolicyDisk) []PolicyDisk {
	for i, x := range disks {
		if x.DeviceName == d.DeviceName {
			if orDefault(d.DeleteRule, defaultDeleteRule) == DeleteNever {
				disks[i].DeleteRule = DeleteNever
			}
			return disks
		}
	}
	return append(disks, d)
}

func mergeConfigDisk(disks []ConfigDisk, d ConfigDisk) []ConfigDisk {
	for i, x := range disks {
		if x.DeviceName == d.DeviceName && x.Source == d.Source {
			if orDefault(d.DeleteRule, defaultDeleteRule) == DeleteNever {
				disks[i].DeleteRule = DeleteNever
			}
			return disks
		}
	}
	return append(disks, d)
}

// releasedState is the instance's disks as the released policy and configs preserved them: a
// release of this run, or, for the group's own destroy, the release of any run (see Released);
// nothing otherwise.
func (s GroupState) releasedState(name string, env Env) DesiredInstance {
	r := s.Released
	if r == nil || !env.groupDestroy && (env.Run == "" || r.Run != env.Run) {
		return DesiredInstance{}
	}
	fromPolicy, fromConfig := Preserve(name, s.Group.Template, r.Policy, r.Configs[name].Config)
	// Desire lays config entries over template disks, so two released entries of one device
	// with different sources both count: check each source on its own.
	d := Desire(name, s.Group.Template, fromPolicy, PreservedState{})
	for _, c := range fromConfig.Disks {
		d.Disks = append(d.Disks, DesiredDisk{DeviceName: c.DeviceName, Source: c.Source, Preserved: true, DeleteRule: c.DeleteRule})
	}
	return d
}

// Applied is the group resource's own apply finishing: its members now follow the policy and
// configs in force, so what was released before protects nothing more.
func (s *GroupState) Applied() {
	s.Released = nil
}
