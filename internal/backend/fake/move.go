package fake

import (
	"context"
	"errors"
	"io"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
)

// errMoveTODO stands for the moves' backend until it is written.
var errMoveTODO = errors.New("moves between hosts are not implemented by the fake backend yet")

func (f *Backend) StatVolume(ctx context.Context, pool, name string) (backend.VolumeStat, error) {
	return backend.VolumeStat{}, errMoveTODO
}

func (f *Backend) DownloadVolume(ctx context.Context, pool, name string, w io.Writer) (int64, error) {
	return 0, errMoveTODO
}

func (f *Backend) UploadVolume(ctx context.Context, spec backend.VolumeUpload, r io.Reader) error {
	return errMoveTODO
}

func (f *Backend) Hostname(ctx context.Context) (string, error) { return "", errMoveTODO }

func (f *Backend) MigrateLive(ctx context.Context, name string, m backend.Migration) error {
	return errMoveTODO
}
