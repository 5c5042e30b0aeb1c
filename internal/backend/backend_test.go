package backend_test

import (
	"reflect"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
)

// pieces are the narrow interfaces Backend is the union of. A piece added to Backend is added
// here too, or the test fails on its methods.
var pieces = map[string]reflect.Type{
	"Host":         reflect.TypeFor[backend.Host](),
	"Domains":      reflect.TypeFor[backend.Domains](),
	"Metadata":     reflect.TypeFor[backend.Metadata](),
	"Devices":      reflect.TypeFor[backend.Devices](),
	"Seeds":        reflect.TypeFor[backend.Seeds](),
	"GuestAgent":   reflect.TypeFor[backend.GuestAgent](),
	"Networks":     reflect.TypeFor[backend.Networks](),
	"Volumes":      reflect.TypeFor[backend.Volumes](),
	"Pools":        reflect.TypeFor[backend.Pools](),
	"Snapshots":    reflect.TypeFor[backend.Snapshots](),
	"Migrator":     reflect.TypeFor[backend.Migrator](),
	"GroupRecords": reflect.TypeFor[backend.GroupRecords](),
}

// TestPiecesPartitionBackend checks that every method of Backend belongs to exactly one piece:
// a method declared on Backend itself, or in no piece, or in two (which Go's embedding allows
// when the signatures agree), fails here, so that a new method is placed where its consumers
// find it.
func TestPiecesPartitionBackend(t *testing.T) {
	t.Parallel()
	owners := map[string][]string{}
	for name, p := range pieces {
		if p.NumMethod() == 0 {
			t.Errorf("piece %s has no methods", name)
		}
		for i := range p.NumMethod() {
			m := p.Method(i).Name
			owners[m] = append(owners[m], name)
		}
	}
	b := reflect.TypeFor[backend.Backend]()
	var unplaced []string
	for i := range b.NumMethod() {
		if _, ok := owners[b.Method(i).Name]; !ok {
			unplaced = append(unplaced, b.Method(i).Name)
		}
	}
	if len(unplaced) > 0 {
		t.Errorf("Backend methods in no piece (declare each in the piece its consumers use): %v", unplaced)
	}
	shared := map[string][]string{}
	for m, in := range owners {
		if _, ok := b.MethodByName(m); !ok {
			t.Errorf("method %s of piece %v is not a method of Backend: embed the piece in Backend", m, in)
		}
		if len(in) > 1 {
			sort.Strings(in)
			shared[m] = in
		}
	}
	if diff := cmp.Diff(map[string][]string{}, shared); diff != "" {
		t.Errorf("methods declared in more than one piece (-want +got):\n%s", diff)
	}
}
