package libvirt

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	golibvirt "github.com/digitalocean/go-libvirt"
	"libvirt.org/go/libvirtxml"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/hostfile"
)

// Files are judged at the moment they are handed to libvirt, not only when a plan named them: a
// name checked at plan (a volume's file in its pool's directory, a host file outside the pools)
// may have been swapped for a symbolic link since, and libvirt, running as root, follows links
// and re-owns what it opens. On a host reached through its local socket the provider sees the
// same files as libvirt and checks them just before each call that passes them (define, attach,
// start, volume creation); on another host it cannot, and libvirt is trusted with its own pools.

// localOwners are the owners a root provider accepts for host files, read once.
var localOwners = sync.OnceValue(func() hostfile.Owners { return hostfile.LocalOwners(os.Geteuid()) })

// local reports whether the connection's daemon is on this machine, whose files are its files.
func (c conn) local() bool { return IsLocal(c.uri) }

// checkDisks refuses disks (resolved: HostFile set) and shares that may not be handed to libvirt
// now: a pool volume whose file is a link or resolves outside its pool's directory, a host file
// or share directory whose name now reaches a system file, another kind or another owner. What
// names the refused object: the domain and the device.
func (c conn) checkDisks(domain string, disks []backend.Disk, shares []engine.Filesystem) error {
	if !c.local() {
		return nil
	}
	dirs := map[string]string{}
	for _, d := range disks {
		if problem := c.diskProblem(d, dirs); problem != "" {
			return fmt.Errorf("refused to hand disk %s of domain %s to libvirt on %s: %s", d.DeviceName, domain, c.uri, problem)
		}
	}
	for _, f := range shares {
		if problem := hostfile.InPlace(f.Source, true, localOwners()); problem != "" {
			return fmt.Errorf("refused to share directory %q (target %s) with domain %s on %s: %s", f.Source, f.Target, domain, c.uri, problem)
		}
	}
	return nil
}

// diskProblem is what is wrong with handing d to libvirt now; dirs caches pool directories.
func (c conn) diskProblem(d backend.Disk, dirs map[string]string) string {
	switch {
	case d.HostFile:
		return c.unlistedProblem(d.Path)
	case d.Volume != "":
		p, err := c.l.StoragePoolLookupByName(d.Pool)
		if err != nil {
			return "" // libvirt says what is missing in its own words
		}
		v, err := c.l.StorageVolLookupByName(p, d.Volume)
		if err != nil {
			return ""
		}
		return c.volumeFileProblem(v, dirs)
	case d.Path != "":
		v, err := c.l.StorageVolLookupByPath(d.Path)
		if err != nil {
			return ""
		}
		return c.volumeFileProblem(v, dirs)
	}
	return ""
}

// volumeFileProblem refuses a volume whose file is a symbolic link, or resolves outside its pool's
// directory (pools other than directories keep no files of their own: nothing to check).
func (c conn) volumeFileProblem(v golibvirt.StorageVol, dirs map[string]string) string {
	return c.volumeFileProblemAt(v, dirs, 0)
}

func (c conn) volumeFileProblemAt(v golibvirt.StorageVol, dirs map[string]string, depth int) string {
	dir, ok := dirs[v.Pool]
	if !ok {
		if p, err := c.l.StoragePoolLookupByName(v.Pool); err == nil {
			if info, err := c.poolInfo(p); err == nil {
				dir = info.Path
			}
		}
		dirs[v.Pool] = dir
	}
	if dir == "" {
		return ""
	}
	path, err := c.l.StorageVolGetPath(v)
	if err != nil || !strings.HasPrefix(path, "/") {
		return ""
	}
	if problem := hostfile.NotALink(path, dir); problem != "" {
		return fmt.Sprintf("volume %s of pool %s: %s", v.Name, v.Pool, problem)
	}
	// libvirt opens (and re-owns) an overlay's backing image too: it is judged as the volume
	// is, so that a member made before host images were copied into the pool does not start
	// on a backing file re-pointed since.
	if depth < maxBackingDepth {
		if b := c.backingOf(v); b != "" {
			if bv, err := c.l.StorageVolLookupByPath(b); err == nil {
				if problem := c.volumeFileProblemAt(bv, dirs, depth+1); problem != "" {
					return fmt.Sprintf("the backing image of volume %s of pool %s: %s", v.Name, v.Pool, problem)
				}
			} else if problem := hostfile.InPlace(b, false, localOwners()); problem != "" {
				return fmt.Sprintf("the backing image of volume %s of pool %s: %s", v.Name, v.Pool, problem)
			}
		}
	}
	return ""
}

// maxBackingDepth bounds how far down a backing chain the check goes (the provider makes
// chains of one overlay on one image).
const maxBackingDepth = 4

// backingOf is the path of the volume's backing image as libvirt records it, or "".
func (c conn) backingOf(v golibvirt.StorageVol) string {
	doc, err := c.l.StorageVolGetXMLDesc(v, 0)
	if err != nil {
		return ""
	}
	var x libvirtxml.StorageVolume
	if x.Unmarshal(doc) != nil || x.BackingStore == nil {
		return ""
	}
	return x.BackingStore.Path
}

// checkBacking refuses the image an overlay is to be backed by when it may not be handed to
// libvirt now (see checkDisks): a pool volume's file swapped for a link, a host file re-pointed.
func (c conn) checkBacking(spec backend.VolumeSpec, path string) error {
	if !c.local() || path == "" {
		return nil
	}
	var problem string
	if v, err := c.l.StorageVolLookupByPath(path); err == nil {
		problem = c.volumeFileProblem(v, map[string]string{})
	} else {
		problem = c.unlistedProblem(path)
	}
	if problem != "" {
		return fmt.Errorf("refused to create volume %s/%s on %s backed by %s: %s", spec.Pool, spec.Name, c.uri, path, problem)
	}
	return nil
}

// checkDefined judges the disks and shares of the domain's stored definition, just before it
// starts: what it was defined with may have been swapped since.
func (c conn) checkDefined(d golibvirt.Domain) error {
	if !c.local() {
		return nil
	}
	doc, err := c.l.DomainGetXMLDesc(d, golibvirt.DomainXMLInactive)
	if err != nil {
		return wrap("read domain XML", d.Name, err)
	}
	var x libvirtxml.Domain
	if err := x.Unmarshal(doc); err != nil || x.Devices == nil {
		return nil //nolint:nilerr // a definition this cannot read is not judged here: the start fails in libvirt's words
	}
	var disks []backend.Disk
	for _, dd := range x.Devices.Disks {
		if dd.Source == nil || dd.Device == "cdrom" && dd.Source.File == nil && dd.Source.Volume == nil {
			continue
		}
		name := dd.Serial
		if name == "" && dd.Target != nil {
			name = dd.Target.Dev
		}
		switch {
		case dd.Source.Volume != nil:
			disks = append(disks, backend.Disk{DeviceName: name, Pool: dd.Source.Volume.Pool, Volume: dd.Source.Volume.Volume})
		case dd.Source.File != nil:
			disk := backend.Disk{DeviceName: name, Path: dd.Source.File.File}
			if _, err := c.l.StorageVolLookupByPath(disk.Path); err != nil {
				disk.HostFile = true
			}
			disks = append(disks, disk)
		}
	}
	var shares []engine.Filesystem
	for _, f := range x.Devices.Filesystems {
		if f.Source != nil && f.Source.Mount != nil {
			target := ""
			if f.Target != nil {
				target = f.Target.Dir
			}
			shares = append(shares, engine.Filesystem{Source: f.Source.Mount.Dir, Target: target})
		}
	}
	return c.checkDisks(d.Name, disks, shares)
}

// unlistedProblem judges a path no pool lists as a volume. One in a pool's directory is a
// volume file the pool does not list (a volume swapped for a link, which a refreshed directory
// pool may skip): it must be no link and stay inside the directory. Any other is a host file.
func (c conn) unlistedProblem(path string) string {
	if dir := c.poolDirOf(path); dir != "" {
		return hostfile.NotALink(path, dir)
	}
	return hostfile.InPlace(path, false, localOwners())
}

// poolDirOf is the directory of the active pool whose directory holds path, or "".
func (c conn) poolDirOf(path string) string {
	pools, _, err := c.l.ConnectListAllStoragePools(1, golibvirt.ConnectListStoragePoolsActive)
	if err != nil {
		return ""
	}
	for _, p := range pools {
		if info, err := c.poolInfo(p); err == nil && info.Path != "" && filepath.Dir(path) == filepath.Clean(info.Path) {
			return info.Path
		}
	}
	return ""
}
