package providerdata

import "io/fs"

// fileUID: Windows files have no uid; libvirt hosts the provider can see are unix machines.
func fileUID(fs.FileInfo) (uint32, bool) { return 0, false }
