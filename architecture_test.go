package kproxy_test

import (
	"bufio"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is the import path every project package starts with.
const module = "github.com/kproxy-dev/kproxy"

// TestImportDirections holds the code to the import table of
// docs/architecture.md: each package imports only the project packages its
// row lists (test files aside), and every package has a row.
func TestImportDirections(t *testing.T) {
	allowed := importTable(t, "docs/architecture.md")
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(strings.TrimPrefix(fields[0], module), "/")
		if pkg == "" {
			continue // this test's own package
		}
		may, ok := allowed[pkg]
		if !ok {
			t.Errorf("package %s has no row in docs/architecture.md's import table", pkg)
			continue
		}
		for _, imp := range fields[1:] {
			dep, ok := strings.CutPrefix(imp, module+"/")
			if !ok || slices.Contains(may, "any") || slices.Contains(may, dep) {
				continue
			}
			t.Errorf("%s imports %s; docs/architecture.md allows only %v", pkg, dep, may)
		}
	}
}

// importTable reads the table between <!-- imports --> and <!-- /imports -->
// in the document at path: package -> the packages it may import.
func importTable(t *testing.T, path string) map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	table := map[string][]string{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "<!-- imports -->":
			in = true
		case line == "<!-- /imports -->":
			in = false
		case in && strings.HasPrefix(line, "|") && !strings.HasPrefix(line, "|---") && !strings.HasPrefix(line, "| package"):
			cells := strings.Split(strings.Trim(line, "|"), "|")
			if len(cells) != 2 {
				t.Fatalf("%s: import table row %q: want two cells", path, line)
			}
			var may []string
			for _, dep := range strings.Split(cells[1], ",") {
				if dep = strings.TrimSpace(dep); dep != "" {
					may = append(may, dep)
				}
			}
			table[strings.TrimSpace(cells[0])] = may
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(table) == 0 {
		t.Fatalf("%s: no import table between <!-- imports --> and <!-- /imports -->", path)
	}
	return table
}
