package engine

import "time"

// DefaultReadyTimeout is update_policy.ready_timeout when the configuration gives none.
//
// The provider helper's branch adds this file with the schema's rules and the same constant: on
// the merge, take that file.
const DefaultReadyTimeout = 5 * time.Minute
