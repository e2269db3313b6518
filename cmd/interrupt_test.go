package cmd

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// interruptChildEnv makes the test binary the child of
// TestSecondSignalQuitsAtOnce.
const interruptChildEnv = "AUTOINFER_TEST_INTERRUPT_CHILD"

// The first SIGINT cancels the CLI's context and prints the notice; the
// child then winds down forever, so only the second SIGINT, which the
// released handler no longer catches, can end it: killed by the signal.
// Without the release the child would sleep until the hang guard killed it.
func TestSecondSignalQuitsAtOnce(t *testing.T) {
	if os.Getenv(interruptChildEnv) == "1" {
		ctx, stop := interruptible(os.Stderr)
		defer stop()
		os.Stdout.WriteString("ready\n")
		<-ctx.Done()
		time.Sleep(time.Hour) // a wind-down that never ends
		return
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard, not a bound
	defer cancel()
	child := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestSecondSignalQuitsAtOnce$")
	child.Env = append(os.Environ(), interruptChildEnv+"=1")
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := child.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	if out := bufio.NewScanner(stdout); !out.Scan() || out.Text() != "ready" {
		t.Fatalf("child did not get ready: %q", out.Text())
	}
	if err := child.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	errs := bufio.NewScanner(stderr)
	var said []string
	for errs.Scan() && errs.Text() != interruptNotice {
		said = append(said, errs.Text())
	}
	if errs.Text() != interruptNotice {
		t.Fatalf("no notice after the first SIGINT; stderr: %q", said)
	}
	if err := child.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	for errs.Scan() {
	}
	err = child.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("child: %v, want killed by SIGINT", err)
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGINT || ctx.Err() != nil {
		t.Fatalf("child ended with %v (hang guard expired: %v), want killed by SIGINT", ee, ctx.Err() != nil)
	}
}
