package engine

import "testing"

func TestBootDiskSizeMiB(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	tests := map[string]struct {
		image      bool
		imageBytes uint64
		prior      int64
		want       int64
	}{
		"no image":                                    {want: 1024},
		"no image, disks already larger":              {prior: 4096, want: 4096},
		"no image, disks smaller (size_mib removed)":  {prior: 512, want: 1024},
		"a cloud image of 2 GiB":                      {image: true, imageBytes: 2048 * mib, want: 2048},
		"a virtual size not a whole MiB rounds up":    {image: true, imageBytes: 2048*mib + 1, want: 2049},
		"a tiny image":                                {image: true, imageBytes: 64 * mib, want: 64},
		"a state from the flat 1024 default keeps it": {image: true, imageBytes: 64 * mib, prior: 1024, want: 1024},
		"a larger image grows the disks":              {image: true, imageBytes: 3 * 1024 * mib, prior: 1024, want: 3072},
		"an image whose size cannot be read, new":     {image: true, want: 1024},
		"an image whose size cannot be read, kept":    {image: true, prior: 8192, want: 8192},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := BootDiskSizeMiB(tt.image, tt.imageBytes, tt.prior); got != tt.want {
				t.Fatalf("BootDiskSizeMiB(%v, %d, %d) = %d, want %d", tt.image, tt.imageBytes, tt.prior, got, tt.want)
			}
		})
	}
}
