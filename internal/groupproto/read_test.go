package groupproto

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRead(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		in   ReadInput
		want ReadAction
	}{
		"record read, configuration the state's": {ReadInput{Record: RecordFound}, ReadMembers},
		"record changed by another apply":        {ReadInput{Record: RecordFound, OtherConfiguration: true}, ReadFromRecord},
		"just imported":                          {ReadInput{Record: RecordFound, Imported: true}, ReadFromRecord},
		"record's host does not answer":          {ReadInput{Record: RecordUnreachable}, ReadWithoutRecord},
		"import, record's host does not answer":  {ReadInput{Record: RecordUnreachable, Imported: true}, ReadFail},
		"record unreadable":                      {ReadInput{Record: RecordRefused}, ReadFail},
		"record gone":                            {ReadInput{Record: RecordMissing}, ReadLostRecord},
		"import of a group that is not there":    {ReadInput{Record: RecordMissing, Imported: true}, ReadNotFound},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(c.want, Read(c.in)); diff != "" {
				t.Errorf("Read(%+v) (-want +got):\n%s", c.in, diff)
			}
		})
	}
}
