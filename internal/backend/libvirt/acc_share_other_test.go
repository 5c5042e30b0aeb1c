//go:build !unix

package libvirt

// holdAccShare does nothing: the lock shared with internal/provider's acceptance runs
// (acc_share_unix_test.go) is a unix one.
func holdAccShare() error { return nil }
