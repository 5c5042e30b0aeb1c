package engine

import (
	"fmt"
	"strings"
)

// HostImage is a source_image that is a host file outside every storage pool, on a host whose
// files the provider reads: the provider reads it once, through a descriptor opened after the
// file is judged, into an image volume of the group's pool, and boot volumes back onto that
// volume. libvirt is never handed the host path, so a link swapped after the check reaches
// nothing, and libvirt re-owns only the group's copy, never the user's file.
type HostImage struct {
	// Source is the source_image as the template gives it.
	Source string
	// Format is the image's format ("qcow2", "raw"); SHA256 the hex digest of its bytes, read
	// at plan; Bytes their count and VirtualBytes the disk's size.
	Format       string
	SHA256       string
	Bytes        uint64
	VirtualBytes uint64
	// Volume is the image volume's name (ImageVolumeName).
	Volume string
	// Problem says why the file cannot be copied (it was refused when it was opened, or it is
	// not self-contained): a plan that would make a boot volume from it is blocked, naming it.
	Problem string
}

// imageDigestChars is how much of the image's sha256 names its volume.
const imageDigestChars = 12

// ImageVolumeName is the name of the group's image volume holding the bytes of digest (a
// sha256 in hex), of format: "<base>-image-<first 12 hex digits>.<format>". It is no member's
// name ("image" is no index), and the same bytes give the same volume, so new members of a
// group share one copy until the file's bytes change.
func ImageVolumeName(base, digest, format string) string {
	d := strings.ToLower(digest)
	if len(d) > imageDigestChars {
		d = d[:imageDigestChars]
	}
	return base + "-image-" + d + "." + format
}

// imaged has the operation's new boot volumes back onto the group's image volume on its host,
// where Env.Images has one for the boot volume's image, and makes that volume first when the
// pool listing did not show it. An existing overlay (a Keep of a volume that is there) is left
// as it was made: only a volume the operation creates takes the copy.
func (e Env) imaged(g Group, op Operation) Operation {
	img, ok := e.Images[HostOf(op.Host)]
	if !ok || img.Source == "" {
		return op
	}
	if img.Volume == "" {
		img.Volume = ImageVolumeName(g.Base, img.SHA256, img.Format)
	}
	if img.Problem != "" {
		for _, v := range op.Volumes {
			if v.DeviceName == BootDeviceName && v.BackingImage == img.Source && (v.Fate == Recreate || v.Fate == Keep && e.Volumes != nil && !e.Volumes[v.Volume]) {
				op.ImageProblem = fmt.Sprintf("source_image %q cannot be copied into the group's pool on host %s: %s", img.Source, HostOf(op.Host), img.Problem)
			}
		}
		return op
	}
	var vols []VolumeOp
	for i, v := range op.Volumes {
		made := v.Fate == Recreate || v.Fate == Keep && e.Volumes != nil && !e.Volumes[v.Volume]
		if v.DeviceName != BootDeviceName || v.BackingImage != img.Source || !made {
			continue
		}
		if vols == nil {
			vols = append([]VolumeOp(nil), op.Volumes...)
		}
		v.BackingImage, v.BackingVolume = "", img.Volume
		if e.Volumes == nil || !e.Volumes[img.Volume] {
			imp := img
			v.Import = &imp
		}
		vols[i] = v
	}
	if vols != nil {
		op.Volumes = vols
	}
	return op
}

// ImageVolumes are the image volumes the plan makes, by host: the group record lists them
// before the plan runs, so that the group's destroy deletes them, and nothing else of their
// name scheme.
func (p GroupPlan) ImageVolumes() map[string][]HostImage {
	out := map[string][]HostImage{}
	for _, w := range p.Waves {
		for _, op := range w.Ops {
			for _, v := range op.Volumes {
				if v.Import != nil {
					h := HostOf(op.Host)
					if !hasImage(out[h], v.Import.Volume) {
						out[h] = append(out[h], *v.Import)
					}
				}
			}
		}
	}
	return out
}

func hasImage(imgs []HostImage, volume string) bool {
	for _, img := range imgs {
		if img.Volume == volume {
			return true
		}
	}
	return false
}

// madeImage reports whether volume is an image volume the group made on host.
func (s GroupState) madeImage(host, volume string) bool {
	return hasImage(s.Images[host], volume)
}

// RecordedImage is the group's copy of source on host, when it has one: the latest made.
func (s GroupState) RecordedImage(host, source string) (HostImage, bool) {
	imgs := s.Images[HostOf(host)]
	for i := len(imgs) - 1; i >= 0; i-- {
		if imgs[i].Source == source {
			return imgs[i], true
		}
	}
	return HostImage{}, false
}

// AddImages is the group's image volumes once those of add are listed too, and whether that
// changes what the record holds.
func (s GroupState) AddImages(add map[string][]HostImage) (map[string][]HostImage, bool) {
	changed := false
	out := make(map[string][]HostImage, len(s.Images)+len(add))
	for h, imgs := range s.Images {
		out[h] = append([]HostImage(nil), imgs...)
	}
	for h, imgs := range add {
		for _, img := range imgs {
			if !hasImage(out[h], img.Volume) {
				img.Problem = ""
				out[h] = append(out[h], img)
				changed = true
			}
		}
	}
	return out, changed
}
