package engine

// DefaultBootDiskMiB is the size of a boot disk with no image and no size_mib.
const DefaultBootDiskMiB = 1024

// BootDiskSizeMiB is the size of a boot disk whose size_mib is not set. With an image it is the
// image's virtual size (imageBytes, as the host reports it) rounded up to a whole MiB, so that
// leaving size_mib out works with any image; without one it is DefaultBootDiskMiB. An image
// whose size could not be read (imageBytes 0: a host file on a host whose files cannot be seen)
// gets DefaultBootDiskMiB, and the apply's own check stands.
//
// prior is the size the group's boot disks have now (0 for a new group): the result is never
// less, since a boot disk never shrinks. So a group created when the default was a flat 1024
// keeps its 1024 (its image was checked to fit), and a group whose image changes to a smaller
// one keeps its disks' size.
func BootDiskSizeMiB(image bool, imageBytes uint64, prior int64) int64 {
	size := int64(DefaultBootDiskMiB)
	if image && imageBytes > 0 {
		size = int64((imageBytes + 1<<20 - 1) >> 20)
	} else if image && prior > 0 {
		// Unreadable now: what the disks have stands.
		size = prior
	}
	return max(size, prior)
}
