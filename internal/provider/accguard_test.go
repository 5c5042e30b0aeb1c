package provider

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"testing"
)

// terraform-plugin-testing runs a test case's CheckDestroy after its own final destroy, and skips
// both when the last step leaves nothing to destroy: a case whose last step is `Destroy: true`
// never runs its CheckDestroy. Two tests passed that way before (see their last steps); this
// keeps a new one from doing it again, by reading the acceptance tests' source.

// uncheckedLastDestroys returns where, in the file, a test case's literal list of steps ends
// with a `Destroy: true` step that has no Check of its own.
func uncheckedLastDestroys(fset *token.FileSet, f *ast.File) []string {
	var found []string
	ast.Inspect(f, func(n ast.Node) bool {
		tc, ok := n.(*ast.CompositeLit)
		if !ok || !isSelector(tc.Type, "resource", "TestCase") {
			return true
		}
		steps, ok := field(tc, "Steps").(*ast.CompositeLit)
		if !ok || len(steps.Elts) == 0 {
			return true
		}
		last, ok := steps.Elts[len(steps.Elts)-1].(*ast.CompositeLit)
		if !ok {
			return true
		}
		if d, ok := field(last, "Destroy").(*ast.Ident); ok && d.Name == "true" && field(last, "Check") == nil {
			found = append(found, fset.Position(last.Pos()).String())
		}
		return true
	})
	return found
}

// field is the value of the composite literal's key, nil when it has none.
func field(lit *ast.CompositeLit, key string) ast.Expr {
	for _, e := range lit.Elts {
		if kv, ok := e.(*ast.KeyValueExpr); ok {
			if k, ok := kv.Key.(*ast.Ident); ok && k.Name == key {
				return kv.Value
			}
		}
	}
	return nil
}

func isSelector(e ast.Expr, pkg, name string) bool {
	s, ok := e.(*ast.SelectorExpr)
	if !ok || s.Sel.Name != name {
		return false
	}
	p, ok := s.X.(*ast.Ident)
	return ok && p.Name == pkg
}

func TestUncheckedLastDestroys(t *testing.T) {
	cases := []struct {
		name string
		src  string
		want int
	}{
		{"last step destroys, no check", `resource.TestCase{Steps: []resource.TestStep{{Config: c}, {Config: c, Destroy: true}}}`, 1},
		{"last step destroys and checks", `resource.TestCase{Steps: []resource.TestStep{{Config: c}, {Config: c, Destroy: true, Check: f}}}`, 0},
		{"an earlier step destroys", `resource.TestCase{Steps: []resource.TestStep{{Config: c, Destroy: true}, {Config: c}}}`, 0},
		{"no destroy step", `resource.TestCase{Steps: []resource.TestStep{{Config: c}}}`, 0},
		{"steps built elsewhere", `resource.TestCase{Steps: steps}`, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "x_test.go", "package p\nvar _ = "+c.src+"\n", 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := uncheckedLastDestroys(fset, f); len(got) != c.want {
				t.Fatalf("found %v, want %d", got, c.want)
			}
		})
	}
}

// TestSteps_lastDestroyChecks reads this package's tests: none may end with a destroy
// step that checks nothing, since its CheckDestroy would never run.
func TestSteps_lastDestroyChecks(t *testing.T) {
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var found []string
	cases := 0
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if tc, ok := n.(*ast.CompositeLit); ok && isSelector(tc.Type, "resource", "TestCase") {
				cases++
			}
			return true
		})
		found = append(found, uncheckedLastDestroys(fset, f)...)
	}
	if cases == 0 {
		t.Fatal("no resource.TestCase found: the check reads nothing")
	}
	if len(found) > 0 {
		slices.Sort(found)
		t.Fatalf("test cases end with a destroy step that has no Check, so their CheckDestroy never runs (check in that step): %v", found)
	}
}
