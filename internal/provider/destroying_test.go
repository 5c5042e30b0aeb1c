package provider

import "testing"

// TestDestroyCommand tells destroys (and refreshes) from other Terraform commands by their
// arguments and environment, called directly.
func TestDestroyCommand(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		args, env []string
		want      bool
	}{
		"destroy":                              {args: []string{"terraform", "destroy", "-auto-approve"}, want: true},
		"destroy after a global option":        {args: []string{"/usr/local/bin/terraform", "-chdir=env/prod", "destroy"}, want: true},
		"plan -destroy":                        {args: []string{"terraform", "plan", "-destroy", "-out=p"}, want: true},
		"apply --destroy":                      {args: []string{"tofu", "apply", "--destroy"}, want: true},
		"apply -destroy=true":                  {args: []string{"terraform", "apply", "-destroy=true"}, want: true},
		"legacy refresh":                       {args: []string{"terraform", "refresh", "-no-color"}, want: true},
		"plan -destroy in TF_CLI_ARGS_plan":    {args: []string{"terraform", "plan"}, env: []string{"HOME=/root", "TF_CLI_ARGS_plan=-no-color -destroy"}, want: true},
		"apply -destroy in TF_CLI_ARGS":        {args: []string{"terraform", "apply"}, env: []string{"TF_CLI_ARGS=-destroy"}, want: true},
		"plan":                                 {args: []string{"terraform", "plan", "-out=p"}},
		"apply":                                {args: []string{"terraform", "apply", "-auto-approve"}},
		"apply of a saved plan":                {args: []string{"terraform", "apply", "tfplan"}},
		"plan -refresh-only":                   {args: []string{"terraform", "plan", "-refresh-only"}},
		"-destroy=false":                       {args: []string{"terraform", "apply", "-destroy=false"}},
		"TF_CLI_ARGS of another command":       {args: []string{"terraform", "apply"}, env: []string{"TF_CLI_ARGS_plan=-destroy"}},
		"a variable whose value says -destroy": {args: []string{"terraform", "apply", "-var", "x=-destroy"}},
		"destroy as a later argument":          {args: []string{"terraform", "import", "a.b", "destroy"}},
		"no command":                           {args: []string{"terraform"}},
		"no arguments":                         {},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := destroyCommand(c.args, c.env); got != c.want {
				t.Errorf("destroyCommand(%q, %q) = %v, want %v", c.args, c.env, got, c.want)
			}
		})
	}
}
