package engine

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var leaseT0 = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

func TestTakeLease(t *testing.T) {
	t.Parallel()
	t0 := leaseT0
	me := Lease{Holder: "me", Host: "h", PID: 1}
	other := &Lease{Holder: "other", Host: "h", PID: 2, Since: t0.Add(-time.Minute), Expires: t0.Add(time.Second)}
	mine := &Lease{Holder: "me", Since: t0.Add(-time.Minute), Expires: t0.Add(time.Second)}
	dead := func(l Lease) bool { return l.PID == 2 }
	fresh := &Lease{Holder: "me", Host: "h", PID: 1, Since: t0, Expires: t0.Add(time.Minute)}
	tests := map[string]struct {
		cur     *Lease
		gone    func(Lease) bool
		want    *Lease
		wantErr *LeaseError
	}{
		"free":                                  {cur: nil, want: fresh},
		"expired":                               {cur: &Lease{Holder: "other", Since: t0.Add(-time.Hour), Expires: t0}, want: fresh},
		"mine is renewed, keeping since":        {cur: mine, want: &Lease{Holder: "me", Host: "h", PID: 1, Since: mine.Since, Expires: t0.Add(time.Minute)}},
		"another live holder":                   {cur: other, wantErr: &LeaseError{Group: "db", Lease: *other}},
		"another live holder, liveness unknown": {cur: other, gone: func(Lease) bool { return false }, wantErr: &LeaseError{Group: "db", Lease: *other}},
		"another holder that is gone":           {cur: other, gone: dead, want: fresh},
		"a holder on this host that is gone, expiring later": {
			cur: &Lease{Holder: "other", Host: "h", PID: 2, Since: t0, Expires: t0.Add(time.Hour)}, gone: dead, want: fresh},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := TakeLease("db", tt.cur, me, t0, time.Minute, tt.gone)
			var le *LeaseError
			errors.As(err, &le)
			if diff := cmp.Diff(tt.wantErr, le); diff != "" {
				t.Fatalf("error (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("lease (-want +got):\n%s", diff)
			}
		})
	}
}

func TestClaimOwner(t *testing.T) {
	t.Parallel()
	t0 := leaseT0
	a := &Owner{ID: "a", Since: t0.Add(-time.Hour)}
	creating := &Owner{ID: "a", Since: t0.Add(-time.Hour), Creating: true}
	tests := map[string]struct {
		cur     *Owner
		exists  bool
		claim   Claim
		want    *Owner
		wantErr error
	}{
		"create a new group":                         {claim: Claim{ID: "b", Create: true}, want: &Owner{ID: "b", Since: t0, Creating: true}},
		"create over an existing group":              {cur: a, exists: true, claim: Claim{ID: "b", Create: true}, wantErr: &ExistsError{Group: "db", Why: "its group record is there"}},
		"create over a record without owner":         {exists: true, claim: Claim{ID: "b", Create: true}, wantErr: &ExistsError{Group: "db", Why: "its group record is there"}},
		"create finishes an unfinished creation":     {cur: creating, exists: true, claim: Claim{ID: "b", Create: true}, want: &Owner{ID: "b", Since: t0, Creating: true}},
		"the creator's create again keeps its owner": {cur: creating, exists: true, claim: Claim{ID: "a", Create: true}, want: creating},
		"the owner changes its group":                {cur: a, exists: true, claim: Claim{ID: "a"}, want: a},
		"another state changes the group":            {cur: a, exists: true, claim: Claim{ID: "b"}, wantErr: &OwnerError{Group: "db", Owner: *a}},
		"an import takes it over":                    {cur: a, exists: true, claim: Claim{ID: "b", TakeoverFrom: "a"}, want: &Owner{ID: "b", Since: t0}},
		"an import of an older owner takes nothing":  {cur: a, exists: true, claim: Claim{ID: "b", TakeoverFrom: "z"}, wantErr: &OwnerError{Group: "db", Owner: *a}},
		"a record from before owners is claimed":     {exists: true, claim: Claim{ID: "b"}, want: &Owner{ID: "b", Since: t0}},
		"an owner without an ID is claimed":          {cur: &Owner{Since: t0.Add(-time.Hour)}, exists: true, claim: Claim{ID: "b"}, want: &Owner{ID: "b", Since: t0}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := ClaimOwner("db", tt.cur, tt.exists, tt.claim, t0)
			if diff := cmp.Diff(tt.wantErr, err); diff != "" {
				t.Fatalf("error (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("owner (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAdmit(t *testing.T) {
	t.Parallel()
	t0 := leaseT0
	w := Writer{Me: Lease{Holder: "me"}, Now: t0, TTL: time.Minute}
	held := &Lease{Holder: "other", Since: t0, Expires: t0.Add(time.Hour)}
	owner := &Owner{ID: "a", Since: t0.Add(-time.Hour)}
	mine := &Lease{Holder: "me", Since: t0, Expires: t0.Add(time.Minute)}
	tests := map[string]struct {
		rec     GroupRecord
		exists  bool
		lease   bool
		claim   *Claim
		want    GroupRecord
		wantErr bool
	}{
		"a lease on a free group":               {exists: true, lease: true, want: GroupRecord{Lease: mine}},
		"no lease asked, none taken":            {exists: true, want: GroupRecord{}},
		"refused by another holder":             {rec: GroupRecord{Lease: held}, exists: true, lease: true, want: GroupRecord{Lease: held}, wantErr: true},
		"a create records its owner":            {lease: true, claim: &Claim{ID: "b", Create: true}, want: GroupRecord{Lease: mine, Owner: &Owner{ID: "b", Since: t0, Creating: true}}},
		"another state's change takes no lease": {rec: GroupRecord{Owner: owner}, exists: true, lease: true, claim: &Claim{ID: "b"}, want: GroupRecord{Owner: owner}, wantErr: true},
		"the owner's change keeps its owner":    {rec: GroupRecord{Owner: owner}, exists: true, lease: true, claim: &Claim{ID: "a"}, want: GroupRecord{Owner: owner, Lease: mine}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rec := tt.rec
			err := rec.Admit("db", tt.exists, w, tt.lease, tt.claim)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want error %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, rec); diff != "" {
				t.Fatalf("record (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGiveBack(t *testing.T) {
	t.Parallel()
	t0 := leaseT0
	mine := &Lease{Holder: "me", Since: t0, Expires: t0.Add(time.Minute)}
	creating := func() *Owner { return &Owner{ID: "a", Since: t0, Creating: true} }
	tests := map[string]struct {
		rec      GroupRecord
		finished bool
		claim    *Claim
		want     GroupRecord
		wantOK   bool
	}{
		"not held":                  {rec: GroupRecord{}, want: GroupRecord{}},
		"held by another":           {rec: GroupRecord{Lease: &Lease{Holder: "other"}}, want: GroupRecord{Lease: &Lease{Holder: "other"}}},
		"unfinished keeps creating": {rec: GroupRecord{Lease: mine, Owner: creating()}, claim: &Claim{ID: "a"}, want: GroupRecord{Owner: creating()}, wantOK: true},
		"finished completes the creation": {rec: GroupRecord{Lease: mine, Owner: creating()}, finished: true, claim: &Claim{ID: "a"},
			want: GroupRecord{Owner: &Owner{ID: "a", Since: t0}}, wantOK: true},
		"finished by another state's claim leaves the creation": {rec: GroupRecord{Lease: mine, Owner: creating()}, finished: true, claim: &Claim{ID: "b"},
			want: GroupRecord{Owner: creating()}, wantOK: true},
		"finished without a claim": {rec: GroupRecord{Lease: mine, Owner: creating()}, finished: true, want: GroupRecord{Owner: creating()}, wantOK: true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rec := tt.rec
			if ok := rec.GiveBack("me", "run", tt.finished, tt.claim); ok != tt.wantOK {
				t.Fatalf("GiveBack = %v, want %v", ok, tt.wantOK)
			}
			if diff := cmp.Diff(tt.want, rec); diff != "" {
				t.Fatalf("record (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckBasis(t *testing.T) {
	t.Parallel()
	writes := func(ws ...Write) GroupRecord { return GroupRecord{Writes: ws} }
	tests := map[string]struct {
		rec        GroupRecord
		basis, now int64
		stale      bool
	}{
		"no basis":                        {rec: writes(), basis: 0, now: 5},
		"unchanged":                       {rec: writes(), basis: 5, now: 5},
		"only this run wrote since":       {rec: writes(Write{5, "x"}, Write{6, "me"}, Write{7, "me"}), basis: 5, now: 7},
		"another run wrote since":         {rec: writes(Write{6, "me"}, Write{7, "other"}), basis: 5, now: 7, stale: true},
		"the history does not reach back": {rec: writes(Write{7, "me"}), basis: 5, now: 7, stale: true},
		"writes after now do not count":   {rec: writes(Write{6, "me"}, Write{7, "other"}), basis: 5, now: 6},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var want error
			if tt.stale {
				want = &StalePlanError{Group: "db", Basis: tt.basis, Now: tt.now}
			}
			if diff := cmp.Diff(want, tt.rec.CheckBasis("db", tt.basis, tt.now, "me")); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestWrote_keepsTheLastWrites(t *testing.T) {
	t.Parallel()
	var rec GroupRecord
	for g := int64(1); g <= keptWrites+10; g++ {
		rec.Wrote(g, "run")
	}
	if len(rec.Writes) != keptWrites || rec.Writes[0].Generation != 11 || rec.Writes[keptWrites-1].Generation != keptWrites+10 {
		t.Fatalf("kept %d writes, from %v to %v", len(rec.Writes), rec.Writes[0], rec.Writes[len(rec.Writes)-1])
	}
}
