package cmd

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/autoinfer/autoinfer/driver"
)

// progress shows a run's progress: a bar on a terminal, otherwise a plain
// line at every 10% of each phase. update runs on the driver's scheduler
// goroutine and does little work.
type progress struct {
	w     io.Writer
	tty   bool
	phase string
	bar   *progressbar.ProgressBar
	next  int
}

func newProgress(w io.Writer, tty bool) *progress { return &progress{w: w, tty: tty} }

func (p *progress) update(pr driver.Progress) {
	if pr.Phase != p.phase {
		p.finish()
		p.phase, p.next = pr.Phase, 0
		if p.tty {
			p.bar = progressbar.NewOptions(pr.Total, progressbar.OptionSetWriter(p.w), progressbar.OptionSetDescription(pr.Phase),
				progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true), progressbar.OptionThrottle(100*time.Millisecond),
				progressbar.OptionClearOnFinish())
		}
	}
	if p.bar != nil {
		p.bar.Describe(fmt.Sprintf("%s p99 TTFT %.0f ms", pr.Phase, pr.Live.P99TTFTMs))
		_ = p.bar.Set(pr.Done)
		return
	}
	if pr.Done*10 >= p.next*pr.Total {
		fmt.Fprintf(p.w, "%s: %d/%d done, %d failed, p50/p99 TTFT %.1f/%.1f ms\n",
			pr.Phase, pr.Done, pr.Total, pr.Live.Failed, pr.Live.P50TTFTMs, pr.Live.P99TTFTMs)
		p.next = pr.Done*10/pr.Total + 1
	}
}

func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
		p.bar = nil
	}
}
