package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// search --kubernetes refuses, before touching a cluster, a spec without
// a search.kubernetes block, one whose block is invalid, and a ledger the
// pods could not write to, creating nothing; search-shard outside a pod
// says where it runs.
// (target/kubernetes runs the search on a real control plane.)
func TestSearchKubernetesBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plain := write("plain.yaml", confirmSpec)
	withBlock := write("k.yaml", strings.Replace(confirmSpec, "search:\n", "search:\n  kubernetes: {image: autoinfer:test, pods: 2}\n", 1))
	badBlock := write("bad.yaml", strings.Replace(confirmSpec, "search:\n", "search:\n  kubernetes: {pods: -1, resources: {requests: {cpu: lots}}}\n", 1))
	db := filepath.Join(dir, "l.db")
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"search", plain, "--kubernetes", "--ledger", db}, []string{"no search.kubernetes block"}},
		{[]string{"search", withBlock, "--kubernetes", "--ledger", db}, []string{"--ledger must be a postgres:// URL", db}},
		{[]string{"search", badBlock, "--kubernetes", "--ledger", db}, []string{"search.kubernetes.image: required", "search.kubernetes.pods", "search.kubernetes.resources.requests.cpu"}},
		{[]string{"search-shard", "--ledger", db}, []string{"AUTOINFER_SEARCH_SPEC", "search --kubernetes pod"}},
	} {
		code, out, errs := run(t, tc.args...)
		if _, err := os.Stat(db); err == nil {
			t.Errorf("%s: created the ledger before refusing", strings.Join(tc.args, " "))
		}
		if code != ExitUsage {
			t.Errorf("%s: exit %d, want %d\n%s%s", strings.Join(tc.args, " "), code, ExitUsage, out, errs)
		}
		for _, w := range tc.want {
			if !strings.Contains(errs, w) {
				t.Errorf("%s: stderr lacks %q:\n%s", strings.Join(tc.args, " "), w, errs)
			}
		}
	}
}
