package validators

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

func TestParsed(t *testing.T) {
	t.Parallel()
	v := Parsed("a word", func(s string) error {
		if s != "ok" {
			return errors.New("not ok")
		}
		return nil
	})
	cases := map[string]struct {
		value types.String
		err   string
	}{
		"accepted": {value: types.StringValue("ok")},
		"null":     {value: types.StringNull()},
		"unknown":  {value: types.StringUnknown()},
		"refused":  {value: types.StringValue("bad"), err: `p = "bad": not ok. Allowed: a word.`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			resp := &validator.StringResponse{}
			v.ValidateString(context.Background(), validator.StringRequest{Path: path.Root("p"), ConfigValue: c.value}, resp)
			switch {
			case c.err == "" && resp.Diagnostics.HasError():
				t.Fatalf("unexpected error: %v", resp.Diagnostics)
			case c.err != "" && (len(resp.Diagnostics.Errors()) != 1 || !strings.Contains(resp.Diagnostics.Errors()[0].Detail(), c.err)):
				t.Fatalf("diagnostics %v, want one error containing %q", resp.Diagnostics, c.err)
			}
		})
	}
}
