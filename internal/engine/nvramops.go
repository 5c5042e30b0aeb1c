package engine

// An EFI member's NVRAM volume (NVRAMVolumeName) holds its UEFI variables: the boot entries the
// firmware wrote for this instance's boot disk, and with Secure Boot the keys of the variable
// store it was made from. libvirt makes it, from the firmware's variable store template, when
// the member starts and the file is missing: the template lives on the host with the firmware
// (/usr/share/OVMF), where no storage call can read it, so the provider never writes the bytes
// and making it fresh means deleting it before the definition that starts on it. Its fate
// follows NVRAMFate; a member's record (DesiredInstance.NVRAM) is what makes it the member's.

// creationNVRAM is what a new member does to a volume of its NVRAM's name: an EFI member has it
// made fresh (a leftover of an earlier member of that name is not its variables).
func creationNVRAM(desired DesiredInstance) Fate {
	if desired.NVRAM == "" {
		return Keep
	}
	return NVRAMFate(Creation)
}

// ownNVRAM reports whether the member's record, or a change of it in flight, names the NVRAM
// volume as the member's: only then is it the member's to delete.
func ownNVRAM(o Observed) bool {
	own := NVRAMVolumeName(o.Name)
	return o.Instance.Current.NVRAM == own || deref(o.Instance.InFlight).NVRAM == own
}

// deletionNVRAM deletes a deleted member's NVRAM, when it is the member's own.
func deletionNVRAM(o Observed) Fate {
	if ownNVRAM(o) {
		return NVRAMFate(PermanentDeletion)
	}
	return Keep
}

// replacementNVRAM makes a recreated EFI member's NVRAM fresh, and deletes the one a member that
// no longer boots with EFI had.
func replacementNVRAM(o Observed, desired DesiredInstance) Fate {
	switch {
	case desired.NVRAM != "":
		return NVRAMFate(Recreation)
	case ownNVRAM(o):
		return NVRAMFate(PermanentDeletion)
	}
	return Keep
}

// nvram adds the deletion of the member's NVRAM volume when the operation recreates or deletes
// it; its fresh bytes are libvirt's to write at the next start.
func (b *taskBuilder) nvram() {
	if b.op.NVRAM != Recreate && b.op.NVRAM != Delete {
		return
	}
	b.nameFree()
	b.add(Task{Kind: TaskDeleteNVRAM, Volume: VolumeOp{DeviceName: NVRAMDeviceName, Volume: NVRAMVolumeName(b.op.Name), Fate: b.op.NVRAM}})
}
