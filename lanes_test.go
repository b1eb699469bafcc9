package kproxy_test

import (
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestBrowserTestsTagged keeps `go test ./...` runnable with Go alone
// (docs/testing.md): a test file whose tests start Chromium through
// internal/headless is built only with the browser tag (or e2e, whose
// lane installs Chromium). Benchmarks may use it untagged: `go test`
// runs none unless asked.
func TestBrowserTestsTagged(t *testing.T) {
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if !importsHeadless(f) || !hasTests(f) {
			return nil
		}
		checked++
		expr := buildConstraint(f)
		withoutBrowser := func(tag string) bool { return tag != "browser" && tag != "e2e" }
		if expr == nil || expr.Eval(withoutBrowser) {
			t.Errorf("%s: its tests start Chromium (internal/headless) but it is built without the browser tag; add //go:build browser", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no test file uses internal/headless; the check checks nothing")
	}
}

func importsHeadless(f *ast.File) bool {
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == module+"/internal/headless" {
			return true
		}
	}
	return false
}

func hasTests(f *ast.File) bool {
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") && fn.Name.Name != "TestMain" {
			return true
		}
	}
	return false
}

// buildConstraint is the file's //go:build line, nil without one.
func buildConstraint(f *ast.File) constraint.Expr {
	for _, g := range f.Comments {
		if g.Pos() >= f.Package {
			break
		}
		for _, c := range g.List {
			if constraint.IsGoBuild(c.Text) {
				if expr, err := constraint.Parse(c.Text); err == nil {
					return expr
				}
			}
		}
	}
	return nil
}
