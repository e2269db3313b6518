package k8stest

import "testing"

func TestExpandVars(t *testing.T) {
	env := map[string]string{"POD_IP": "127.5.0.1", "PORT": "8000"}
	for in, want := range map[string]string{
		"$(POD_IP)":          "127.5.0.1",
		"--host=$(POD_IP):x": "--host=127.5.0.1:x",
		"$(NOPE)":            "$(NOPE)",
		"$$(POD_IP)":         "$(POD_IP)",
		"a$b$(PORT)$":        "a$b8000$",
		"$(unclosed":         "$(unclosed",
	} {
		if got := expandVars(in, env); got != want {
			t.Errorf("expandVars(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTailText(t *testing.T) {
	if got := tailText("a\nb\nc\n", 2, 100); got != "b\nc" {
		t.Errorf("last 2 lines: %q", got)
	}
	if got := tailText("abcdef", 10, 3); got != "def" {
		t.Errorf("last 3 bytes: %q", got)
	}
}
