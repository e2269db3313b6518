package process

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/autoinfer/autoinfer/target"
)

// proc is one running worker process. The goroutine started in startProc
// owns cmd.Wait; it ends when the process exits, which stop guarantees.
type proc struct {
	worker  target.Worker
	cmd     *exec.Cmd
	done    chan struct{} // closed after cmd.Wait returned
	waitErr error         // valid after done is closed
}

// startProc starts argv in a new process group with its output written to
// w.LogPath: a fresh file, or appended after a restart so the log tells the
// worker's whole story.
func startProc(w target.Worker, argv, env []string, appendLog bool) (*proc, error) {
	mode := os.O_TRUNC
	if appendLog {
		mode = os.O_APPEND
	}
	logf, err := os.OpenFile(w.LogPath, os.O_CREATE|os.O_WRONLY|mode, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening worker log: %w", err)
	}
	// The child gets its own copy of the descriptor, so ours can close now.
	defer logf.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logf, logf
	// A process group of its own: stop signals reach the server's children
	// (vLLM forks engine-core and worker processes), and Ctrl-C in the
	// terminal reaches only autoinfer, which then stops workers in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, &target.StartupError{Worker: w, Reason: "could not start " + argv[0], Err: err}
	}
	p := &proc{worker: w, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// stop sends SIGTERM to the process group, waits up to grace (or until ctx
// ends) for the leader to exit, then SIGKILLs the group so that stragglers
// which ignored SIGTERM die too; grace 0 skips SIGTERM. It returns once the
// leader has exited.
func (p *proc) stop(ctx context.Context, grace time.Duration) error {
	pgid := p.cmd.Process.Pid
	select {
	case <-p.done:
	default:
		if grace <= 0 {
			break // no grace: straight to SIGKILL, as a crash
		}
		if err := syscall.Kill(-pgid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("stopping worker %s: %w", p.worker, err)
		}
		timer := time.NewTimer(grace)
		defer timer.Stop()
		select {
		case <-p.done:
		case <-timer.C:
		case <-ctx.Done():
		}
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing worker %s: %w", p.worker, err)
	}
	<-p.done
	return nil
}

// exited reports how the process ended, if it has.
func (p *proc) exited() (target.Exit, bool) {
	select {
	case <-p.done:
	default:
		return target.Exit{}, false
	}
	e := target.Exit{Worker: p.worker, ExitCode: -1, Reason: "exited", LogTail: tail(p.worker.LogPath)}
	if st := p.cmd.ProcessState; st != nil {
		e.ExitCode, e.Reason = st.ExitCode(), st.String()
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			e.Signal = ws.Signal().String()
		}
	}
	return e, true
}

// tail returns the last lines of a log file (at most 4 KiB, 20 lines) for
// error messages; "" when the file cannot be read.
func tail(path string) string {
	const maxBytes, maxLines = 4096, 20
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(st.Size()-maxBytes, 0)
	buf := make([]byte, st.Size()-off)
	n, _ := f.ReadAt(buf, off)
	buf = buf[:n]
	if len(buf) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(buf), "\n"), "\n")
	if off > 0 && len(lines) > 1 {
		lines = lines[1:] // the first line was cut
	}
	if len(lines) > maxLines {
		lines = lines[len(lines)-maxLines:]
	}
	return strings.Join(lines, "\n") + "\n"
}
