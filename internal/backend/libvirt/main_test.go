package libvirt

import (
	"fmt"
	"os"
	"testing"
)

// TestMain holds the acceptance runs' lock shared during an acceptance run (TF_ACC set), so that
// an internal/provider run starting meanwhile does not sweep this package's tfacc- objects.
func TestMain(m *testing.M) {
	if os.Getenv("TF_ACC") != "" {
		if err := holdAccShare(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	os.Exit(m.Run())
}
