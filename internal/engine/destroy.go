package engine

import "strings"

// PlanDestroy deletes every member the group created for good, then the group's own volumes
// that no member holds any more (left by an interruption or kept by an earlier deletion), each
// with the fate VolumeFate gives it. A volume a NEVER rule protects, now or earlier in this run,
// stays.
func PlanDestroy(s GroupState, observed []Observed, volumes []string, env Env) GroupPlan {
	var p GroupPlan
	known := map[string]bool{}
	var del []Operation
	for _, o := range observed {
		if o.Unmanaged {
			continue
		}
		op := Operation{Kind: OpDelete, Name: o.Name, Index: o.Index, Reason: "group destroyed", Power: StatusStopped, Volumes: deletionVolumes(s, o, env)}
		for _, v := range op.Volumes {
			known[v.Volume] = true
		}
		del = append(del, op)
	}
	if len(del) > 0 {
		p.Waves = append(p.Waves, Wave{Ops: del})
	}
	var orphans []VolumeOp
	for _, v := range volumes {
		if known[v] {
			continue
		}
		instance, device, staged, ok := s.ownerOf(v)
		if !ok {
			continue
		}
		if staged {
			orphans = append(orphans, VolumeOp{DeviceName: BootDeviceName, Volume: v, Fate: Delete})
			continue
		}
		if _, inTemplate := s.Group.Template.DiskByName(device); !inTemplate && device != BootDeviceName {
			continue
		}
		fromPolicy, fromConfig := Preserve(instance, s.Group.Template, s.StatefulPolicy(), s.Config(instance))
		now := Desire(instance, s.Group.Template, fromPolicy, fromConfig)
		fate := VolumeFate(protection(device, v, now, s.releasedState(instance, env)), true, PermanentDeletion)
		if fate == Delete {
			orphans = append(orphans, VolumeOp{DeviceName: device, Volume: v, Fate: Delete})
		}
	}
	if len(orphans) > 0 {
		p.Waves = append(p.Waves, Wave{Ops: []Operation{{Kind: OpDelete, Reason: "volumes no member holds", Volumes: orphans}}})
	}
	return p
}

// ownerOf reads a volume name as one of the group's own: the instance and the device it
// belongs to, or a staged boot volume. Named members count when a config names them.
func (s GroupState) ownerOf(volume string) (instance, device string, staged, ok bool) {
	stem, ok := strings.CutSuffix(volume, "."+VolumeFormat)
	if !ok {
		return "", "", false, false
	}
	if inst, ok := strings.CutSuffix(stem, "-"+BootDeviceName+".staging"); ok && s.owns(inst) {
		return inst, BootDeviceName, true, true
	}
	rest, ok := strings.CutPrefix(stem, s.Group.Base+"-")
	if ok {
		if i := strings.IndexByte(rest, '-'); i > 0 {
			inst := s.Group.Base + "-" + rest[:i]
			if _, isIndex := ParseInstanceIndex(s.Group.Base, inst); isIndex {
				return inst, rest[i+1:], false, ValidDeviceName(rest[i+1:]) || rest[i+1:] == BootDeviceName
			}
		}
	}
	for name := range s.Configs {
		if dev, ok := strings.CutPrefix(stem, name+"-"); ok && s.Named(name) && (ValidDeviceName(dev) || dev == BootDeviceName) {
			return name, dev, false, true
		}
	}
	return "", "", false, false
}

func (s GroupState) owns(instance string) bool {
	if _, ok := ParseInstanceIndex(s.Group.Base, instance); ok {
		return true
	}
	_, ok := s.Configs[instance]
	return ok
}

// PlanRemove deletes one member for good, as remove_instance_on_destroy asks.
func PlanRemove(s GroupState, observed []Observed, name string, env Env) GroupPlan {
	var p GroupPlan
	for _, o := range observed {
		if o.Name == name && !o.Unmanaged {
			p.Waves = []Wave{{Ops: []Operation{{Kind: OpDelete, Name: o.Name, Index: o.Index, Reason: "per-instance config destroyed",
				Power: StatusStopped, Volumes: deletionVolumes(s, o, env)}}}}
		}
	}
	return p
}
