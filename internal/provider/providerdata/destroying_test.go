package providerdata

import (
	"context"
	"net"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/peer"

	"github.com/virtfleet/terraform-provider-virt/internal/groupproto"
)

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

// TestCommandDetector: the adapter tells each address's command from the Terraform processes
// served on it, reads them once per address, and without a peer (a call made in-process) asks
// for the empty address.
func TestCommandDetector(t *testing.T) {
	t.Parallel()
	served := map[string][]command{
		"127.0.0.1:1001": {{args: []string{"terraform", "destroy"}}},
		"127.0.0.1:1002": {{args: []string{"terraform", "plan"}}},
		"127.0.0.1:1003": {{args: []string{"terraform", "apply"}}, {args: []string{"terraform", "apply", "-destroy"}}},
	}
	reads := map[string]int{}
	var mu sync.Mutex
	d := &commandDetector{commands: func(addr string) []command {
		mu.Lock()
		defer mu.Unlock()
		reads[addr]++
		return served[addr]
	}}
	at := func(addr string) context.Context {
		if addr == "" {
			return context.Background()
		}
		a, err := net.ResolveTCPAddr("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		return peer.NewContext(context.Background(), &peer.Peer{LocalAddr: a})
	}
	want := map[string]groupproto.Command{
		"127.0.0.1:1001": groupproto.CommandDestroy,
		"127.0.0.1:1002": groupproto.CommandPlan,
		"127.0.0.1:1003": groupproto.CommandDestroy,
		"":               groupproto.CommandPlan,
	}
	got := map[string]groupproto.Command{}
	for range 2 {
		for addr := range want {
			got[addr] = d.Command(at(addr))
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("commands (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"127.0.0.1:1001": 1, "127.0.0.1:1002": 1, "127.0.0.1:1003": 1, "": 1}, reads); diff != "" {
		t.Errorf("reads of the processes by address (-want +got):\n%s", diff)
	}
}
