package process

import (
	"context"

	"github.com/autoinfer/autoinfer/target"
)

// worker is the deployment's member for one worker: the process serving
// it now, replaced by Restart. The deployment serialises its methods.
type worker struct {
	p   *Provisioner
	cur *proc
}

var (
	_ target.Restarter = (*worker)(nil)
	_ target.Exiter    = (*worker)(nil)
)

// Stop sends SIGTERM, then SIGKILL after the grace period.
func (w *worker) Stop(ctx context.Context) error { return w.cur.stop(ctx, w.p.opts.StopGracePeriod) }

// Restart kills the process group without grace, as a crash would, and
// starts the same command again, appending to the same log.
func (w *worker) Restart(ctx context.Context) error {
	old := w.cur
	if err := old.stop(ctx, 0); err != nil {
		return err
	}
	pr, err := startProc(old.worker, old.cmd.Args, old.cmd.Env, true)
	if err != nil {
		return err
	}
	w.cur = pr
	return w.p.waitReady(ctx, pr)
}

// Exited reports how the current process ended, if it has.
func (w *worker) Exited() (target.Exit, bool) { return w.cur.exited() }
