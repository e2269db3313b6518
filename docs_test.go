package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// These tests keep the docs that name code true to the tree: a renamed test
// or a new package fails here, not in a reader's hands.

// modulePackages lists the module's packages as directories relative to the
// module root ("." for the root package), from go list.
func modulePackages(t *testing.T) []string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{.Module.Path}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []string
	for line := range strings.Lines(string(out)) {
		imp, mod, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			t.Fatalf("go list line %q", line)
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(imp, mod), "/")
		if rel == "" {
			rel = "."
		}
		pkgs = append(pkgs, rel)
	}
	return pkgs
}

// tableRows returns the cells of the rows of every markdown table in doc
// whose header's cells are header (case-insensitive), with each row's line
// number.
func tableRows(t *testing.T, doc string, header ...string) map[int][]string {
	t.Helper()
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[int][]string{}
	in := false
	for i, line := range strings.Split(string(b), "\n") {
		cells, ok := cellsOf(line)
		switch {
		case !ok:
			in = false
		case slices.EqualFunc(cells, header, strings.EqualFold):
			in = true
		case in && strings.Trim(line, "|- ") == "":
			// the separator under the header
		case in:
			rows[i+1] = cells
		}
	}
	return rows
}

// cellsOf splits a markdown table line into trimmed cells.
func cellsOf(line string) ([]string, bool) {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "|") || !strings.HasSuffix(line, "|") || len(line) < 2 {
		return nil, false
	}
	cells := strings.Split(line[1:len(line)-1], "|")
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells, true
}

var (
	testName   = regexp.MustCompile("`(Test[A-Za-z0-9_]+)`")
	backticked = regexp.MustCompile("`([^`]+)`")
)

// namedTests reads a test cell ("pkg: `TestA`, `TestB`; pkg2: `TestC`")
// into package → test names. A package is named by its directory or by a
// unique last part of it ("stepmodel"); a segment without a package, or
// with one that matches no package, is reported.
func namedTests(t *testing.T, where, cell string, pkgs []string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for seg := range strings.SplitSeq(cell, ";") {
		names := testName.FindAllStringSubmatch(seg, -1)
		if len(names) == 0 {
			continue
		}
		pkg, _, ok := strings.Cut(seg, ":")
		pkg = strings.TrimSpace(pkg)
		if !ok || strings.Contains(pkg, "`") {
			t.Errorf("%s: %q names tests without their package (want `pkg: `TestName``)", where, strings.TrimSpace(seg))
			continue
		}
		dir := resolvePackage(pkg, pkgs)
		if dir == "" {
			t.Errorf("%s: %q is not one package of the module", where, pkg)
			continue
		}
		for _, n := range names {
			out[dir] = append(out[dir], n[1])
		}
	}
	return out
}

// resolvePackage finds the package directory name stands for: itself, or
// the one package whose path ends in "/name".
func resolvePackage(name string, pkgs []string) string {
	if slices.Contains(pkgs, name) {
		return name
	}
	var found []string
	for _, p := range pkgs {
		if strings.HasSuffix(p, "/"+name) {
			found = append(found, p)
		}
	}
	if len(found) == 1 {
		return found[0]
	}
	return ""
}

// testFuncs returns the Test functions declared in dir's _test.go files,
// and the cases of a table-driven suite as Test<Name>: a suite entry
// {"Name", testName} runs testName as a subtest (the ledger's suite runs
// each on SQLite and PostgreSQL: TestLedgerSuite/<backend>/Name), so a doc
// may name it TestName as long as the entry exists.
func testFuncs(t *testing.T, dir string) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	decl := regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]+)\(`)
	suiteCase := regexp.MustCompile(`\{"([A-Z][A-Za-z0-9_]*)", test([A-Z][A-Za-z0-9_]*)\}`)
	funcs := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range decl.FindAllSubmatch(b, -1) {
			funcs[string(m[1])] = true
		}
		for _, m := range suiteCase.FindAllSubmatch(b, -1) {
			if string(m[1]) == string(m[2]) {
				funcs["Test"+string(m[1])] = true
			}
		}
	}
	return funcs
}

// TestInvariantsNameExistingTests: every invariant of docs/invariants.md
// names at least one test, and every test an invariant table names (there
// and in docs/whatif.md) is declared in the package it is filed under.
func TestInvariantsNameExistingTests(t *testing.T) {
	pkgs := modulePackages(t)
	funcs := map[string]map[string]bool{}
	for _, doc := range []string{"docs/invariants.md", "docs/whatif.md"} {
		rows := tableRows(t, doc, "invariant", "test")
		if len(rows) == 0 {
			t.Errorf("%s has no `| invariant | test |` table", doc)
		}
		for line, cells := range rows {
			where := doc + ":" + strconv.Itoa(line)
			if len(cells) != 2 {
				t.Errorf("%s: %d cells, want 2", where, len(cells))
				continue
			}
			named := namedTests(t, where, cells[1], pkgs)
			if len(named) == 0 && doc == "docs/invariants.md" {
				t.Errorf("%s: invariant %q names no test", where, cells[0])
			}
			for dir, names := range named {
				if funcs[dir] == nil {
					funcs[dir] = testFuncs(t, dir)
				}
				for _, n := range names {
					if !funcs[dir][n] {
						t.Errorf("%s: %s names %s, which %s does not declare", where, cells[0], n, dir)
					}
				}
			}
		}
	}
}

// TestArchitectureTableListsEveryPackage: docs/architecture.md's package
// table names every package go list finds, and nothing that is not one.
func TestArchitectureTableListsEveryPackage(t *testing.T) {
	pkgs := modulePackages(t)
	listed := map[string]bool{}
	for line, cells := range tableRows(t, "docs/architecture.md", "package", "concern") {
		for _, m := range backticked.FindAllStringSubmatch(cells[0], -1) {
			name := strings.TrimSuffix(m[1], "/")
			if !slices.Contains(pkgs, name) {
				t.Errorf("docs/architecture.md:%d lists %q, which is not a package of the module", line, m[1])
			}
			listed[name] = true
		}
	}
	for _, p := range pkgs {
		if !listed[p] {
			t.Errorf("docs/architecture.md's package table does not list %s", p)
		}
	}
}

// pathLike is a backticked repository path: a directory part and a file
// name with an extension.
var pathLike = regexp.MustCompile("`([a-z0-9_./-]+/[A-Za-z0-9_.-]+\\.(?:go|md|yaml|yml|sh))`")

// TestContributingNamesExistingFiles: every file CONTRIBUTING.md's recipes
// name as a worked example exists, and every conformance test they name is
// declared in its package.
func TestContributingNamesExistingFiles(t *testing.T) {
	pkgs := modulePackages(t)
	b, err := os.ReadFile("CONTRIBUTING.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range pathLike.FindAllStringSubmatch(string(b), -1) {
		if _, err := os.Stat(m[1]); err != nil {
			t.Errorf("CONTRIBUTING.md names %s: %v", m[1], err)
		}
	}
	recipes := 0
	for para := range strings.SplitSeq(string(b), "\n\n") {
		rest, ok := strings.CutPrefix(para, "Conformance: ")
		if !ok {
			continue
		}
		recipes++
		for dir, names := range namedTests(t, "CONTRIBUTING.md", strings.ReplaceAll(rest, "\n", " "), pkgs) {
			funcs := testFuncs(t, dir)
			for _, n := range names {
				if !funcs[n] {
					t.Errorf("CONTRIBUTING.md names %s, which %s does not declare", n, dir)
				}
			}
		}
	}
	if recipes < 5 {
		t.Errorf("CONTRIBUTING.md has %d recipes with a Conformance line, want 5 (policy, target kind, workload format, metric, GPU/model)", recipes)
	}
}
