package engine

// Released is what the stateful policy and the configs preserved at some point of one run, before
// they were changed or removed.
//
// It protects the permanent deletions of that run. It also protects the group's own destroy in a
// later run while it is unfinished: the change that released it did not finish applying (a
// policy's destroy that failed or was killed half-way), or the group's destroy that honoured it
// began and did not finish. Either leaves the policy gone from the record, and the destroy run
// again must still keep what the policy preserved when the first began.
type Released struct {
	Run        string
	Policy     Policy
	Configs    map[string]ConfigEntry
	Unfinished bool
}

// Release remembers what the policy and the configs preserve now, before a change to either,
// for the rest of the run. Terraform destroys a group's policy and configs before the group, so
// without this a `terraform destroy` would make every preserved disk stateless just before the
// group's destroy deleted them. A removal still makes the disks stateless at once; only the
// permanent deletions of the same run keep honouring the rules that held when it began. A
// device released under both rules keeps the more protective NEVER. The release is unfinished
// until FinishRelease; an unfinished release of an earlier run is kept aside for the group's
// destroy (UnfinishedReleases), never merged into this run's.
func (s *GroupState) Release(run string) {
	if s.Released != nil && s.Released.Run != run {
		if s.Released.Unfinished {
			s.UnfinishedReleases = append(s.UnfinishedReleases, *s.Released)
		}
		s.Released = nil
	}
	if s.Released == nil {
		s.Released = &Released{Run: run}
	}
	r := s.Released
	r.Unfinished = true
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

// FinishRelease is a hold of run finishing with its work applied: what the run released has
// reached the members, so a later run's destroy need not honour it.
func (s *GroupState) FinishRelease(run string) {
	if s.Released != nil && s.Released.Run == run {
		s.Released.Unfinished = false
	}
}

// DestroyBegins is the group's destroy in run starting: it honours this run's release, and if it
// is cut off, the destroy run again must too.
func (s *GroupState) DestroyBegins(run string) {
	if s.Released != nil && s.Released.Run == run {
		s.Released.Unfinished = true
	}
}

// Applied is the group resource's own apply finishing: its members now follow the policy and
// configs in force, so nothing released before protects anything more.
func (s *GroupState) Applied() {
	s.Released, s.UnfinishedReleases = nil, nil
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

// releasedStates are the instance's disks as the released policies and configs preserved them:
// this run's release; for the group's own destroy, also any unfinished release (see Released).
func (s GroupState) releasedStates(name string, env Env) []DesiredInstance {
	var out []DesiredInstance
	if r := s.Released; r != nil && (env.Run != "" && r.Run == env.Run || env.groupDestroy && r.Unfinished) {
		out = append(out, r.state(name, s.Group.Template))
	}
	if env.groupDestroy {
		for _, r := range s.UnfinishedReleases {
			out = append(out, r.state(name, s.Group.Template))
		}
	}
	return out
}

// state is the instance's disks as the release preserved them.
func (r Released) state(name string, t Template) DesiredInstance {
	fromPolicy, fromConfig := Preserve(name, t, r.Policy, r.Configs[name].Config)
	// Desire lays config entries over template disks, so two released entries of one device
	// with different sources both count: check each source on its own.
	d := Desire(name, t, fromPolicy, PreservedState{})
	for _, c := range fromConfig.Disks {
		d.Disks = append(d.Disks, DesiredDisk{DeviceName: c.DeviceName, Source: c.Source, Preserved: true, DeleteRule: c.DeleteRule})
	}
	return d
}
