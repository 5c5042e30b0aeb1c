//go:build !unix

package lifetime

// ParentGone watches nothing where a parent cannot be told gone by its pid: the plugin ends as
// Terraform ends it.
func ParentGone(int) (gone func() bool, ok bool) { return nil, false }
