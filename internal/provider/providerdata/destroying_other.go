//go:build !linux

package providerdata

// terraformCommands cannot read other processes here: a destroy is not recognised, and its
// plans of the configuration check the host as any plan does.
func terraformCommands(string) []command { return nil }
