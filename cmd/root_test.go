package cmd

import (
	"strings"
	"testing"
)

// Argument errors are bad input, like flag errors: exit 2 with a message,
// never exit 3 (infrastructure) or exit 0 with the help text.
func TestArgumentErrorsExitTwo(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"trial", "validate"}, "accepts 1 arg(s), received 0"},
		{[]string{"trial", "run", "a.yaml", "b.yaml"}, "accepts 1 arg(s), received 2"},
		{[]string{"ledger", "compare", "1"}, "accepts 2 arg(s), received 1"},
		{[]string{"ledger", "pareto", "extra"}, "unknown command"},
		{[]string{"trial", "bogus"}, `unknown command "bogus" for "autoinfer trial"`},
		{[]string{"bogus"}, `unknown command "bogus" for "autoinfer"`},
		{[]string{"trial", "run", "--nope"}, "unknown flag"},
	} {
		code, _, errs := run(t, c.args...)
		if code != ExitUsage || !strings.Contains(errs, c.msg) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", c.args, code, errs, ExitUsage, c.msg)
		}
	}
	// A group without a subcommand still shows its help.
	if code, out, _ := run(t, "ledger"); code != ExitOK || !strings.Contains(out, "Available Commands") {
		t.Errorf("ledger: exit %d, output %q; want 0 and the help", code, out)
	}
}
