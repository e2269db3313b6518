package adapter

import (
	"encoding/json"
	"fmt"
	"github.com/autoinfer/autoinfer/driver/sweep"
	"strconv"
	"sync"

	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/router"
)

// maxReceipts bounds the receipts an embedded router keeps for its trial
// (about 1 KiB each with four candidates).
const maxReceipts = 1 << 20

// receiptLog keeps the route receipts an embedded router reports, by run
// id and request id, until the trial's row is recorded.
type receiptLog struct {
	mu sync.Mutex
	by map[[2]string]*router.Receipt
}

func newReceiptLog() *receiptLog { return &receiptLog{by: map[[2]string]*router.Receipt{}} }

// add keeps rr; a request's later receipt (a retry's) replaces its earlier
// one, so the one kept names the worker that served it.
func (l *receiptLog) add(rr router.ReceiptRecord) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := [2]string{rr.RunID, rr.RequestID}
	if _, ok := l.by[k]; ok || len(l.by) < maxReceipts {
		l.by[k] = rr.Receipt
	}
}

// get is the receipt of request id of run id.
func (l *receiptLog) get(runID, id string) *router.Receipt {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.by[[2]string{runID, id}]
}

// take is get, forgetting the receipt: a run that spools its records
// takes each as its record completes, so the log holds only those of
// requests in flight (and the warm-up's).
func (l *receiptLog) take(runID, id string) *router.Receipt {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := [2]string{runID, id}
	rc := l.by[k]
	delete(l.by, k)
	return rc
}

// measureReal makes the real-time run's records go to a spool as they
// complete (measured), each with the embedded router's receipt.
func (tr *trialRun) measureReal() (*measured, error) {
	m, err := newMeasured(tr.t.Name, sweep.Tally{SLO: sweepSLO(tr.t)}, nil)
	if err != nil {
		return nil, err
	}
	if tr.router != nil && tr.router.receipts != nil {
		log, prefix := tr.router.receipts, tr.requestIDPrefix()
		m.receipt = func(i int) *router.Receipt { return log.take(tr.runID, prefix+strconv.Itoa(i)) }
	}
	tr.measured = m
	return m, nil
}

// receiptIDPrefix is the request id prefix the driver sends when an
// embedded router reports receipts and the workload names none: request ids
// are headers, in neither the stream hash, the sent hash nor the workload's
// identity, so sending them changes no figure and joins every receipt to
// its record.
const receiptIDPrefix = "autoinfer-"

// requestIDPrefix is the prefix the driver sends request ids with: the
// workload's, else receiptIDPrefix in front of an embedded router.
func (tr *trialRun) requestIDPrefix() string {
	if p := tr.t.Workload.RequestIDPrefix; p != "" || tr.router == nil || tr.router.receipts == nil {
		return p
	}
	return receiptIDPrefix
}

// attachReceipts stores each request's receipt on its record, in real
// time from the embedded router's log, joined by the request id the driver
// sent (requestIDPrefix + index); a router of another launch mode reports
// none. (On the virtual clock measured attaches each from the
// deployment's decisions as its record completes.)
func (tr *trialRun) attachReceipts(reqs []ledger.Request) error {
	if tr.router == nil || tr.router.receipts == nil {
		return nil
	}
	prefix := tr.requestIDPrefix()
	for i := range reqs {
		rc := tr.router.receipts.get(tr.runID, prefix+strconv.Itoa(reqs[i].Index))
		if rc == nil {
			continue
		}
		b, err := json.Marshal(rc)
		if err != nil {
			return fmt.Errorf("encoding the route receipt of request %d: %w", reqs[i].Index, err)
		}
		reqs[i].Receipt = b
	}
	return nil
}
