package adapter

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/autoinfer/autoinfer/adapter/virtual"
	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/driver/sweep"
	"github.com/autoinfer/autoinfer/failure"
	"github.com/autoinfer/autoinfer/ledger"
	"github.com/autoinfer/autoinfer/router"
)

// measured takes a trial's measured request records as each becomes final
// (driver.SimOptions.Records, driver.WithRecords) instead of from the
// run's result: it spools each as its ledger record, with its route
// receipt, and keeps only what the trial reads of them after the run (shed
// rate, SLO attainment, the first error body of each type, the decisions'
// outcomes). Nothing it holds grows with the run's length: receipts and
// decisions wait only while their request is in flight.
type measured struct {
	spool  *spool
	shed   ledger.ShedCount
	attain sweep.Tally
	bodies firstBodies
	// receipt takes the route receipt of a final request (nil: none
	// recorded): on the virtual clock from receipts, the receipts of
	// requests not final yet; in real time from the embedded router's log.
	receipt  func(index int) *router.Receipt
	receipts map[int]*router.Receipt
	// decisions writes the decision record (nil: none asked).
	decisions *decisionStream
	err       error // the first error (a receipt that did not encode)
}

// newMeasured opens the spool; w (nil: none) takes the decision record.
func newMeasured(trial string, attain sweep.Tally, w io.Writer) (*measured, error) {
	sp, err := newSpool()
	if err != nil {
		return nil, err
	}
	m := &measured{spool: sp, attain: attain}
	if w != nil {
		m.decisions = newDecisionStream(w, trial)
	}
	return m, nil
}

// keepReceipts attaches to each record the receipt of its request's last
// decision (decided).
func (m *measured) keepReceipts() {
	m.receipts = map[int]*router.Receipt{}
	m.receipt = func(i int) *router.Receipt {
		rc := m.receipts[i]
		delete(m.receipts, i)
		return rc
	}
}

// decided takes one routing decision as it is made.
func (m *measured) decided(d virtual.Decision) {
	if m.receipts != nil && !d.Warmup && d.Receipt != nil {
		m.receipts[d.ID] = d.Receipt // the last decision of a request is its route
	}
	if m.decisions != nil {
		m.decisions.add(d)
	}
}

// add takes one final measured record.
func (m *measured) add(r *driver.RequestRecord) {
	q := requestOf(r)
	if rc := m.receiptOf(r.Index); rc != nil {
		b, err := json.Marshal(rc)
		if err != nil && m.err == nil {
			m.err = fmt.Errorf("encoding the route receipt of request %d: %w", r.Index, err)
		}
		q.Receipt = b
	}
	m.shed.Add(q)
	m.attain.Add(r)
	m.bodies.add(r)
	if m.decisions != nil {
		m.decisions.result(r)
	}
	m.spool.add(q)
}

func (m *measured) receiptOf(i int) *router.Receipt {
	if m.receipt == nil {
		return nil
	}
	return m.receipt(i)
}

// finish writes the decisions still waiting (those whose request never
// became final get no outcome) and reports the first error; nil does
// nothing.
func (m *measured) finish() error {
	if m == nil {
		return nil
	}
	err := m.err
	if m.decisions != nil {
		err = errors.Join(err, m.decisions.close())
	}
	return err
}

// close removes the spool.
func (m *measured) close() error { return m.spool.close() }

// firstBodies keeps the lowest-indexed record's error body of each error
// type, as errorBodies finds it in the records by index, whatever order
// the records complete in.
type firstBodies map[string]firstBody

type firstBody struct {
	index int
	body  failure.ErrorBody
}

func (f *firstBodies) add(r *driver.RequestRecord) {
	if len(r.ErrorBody) == 0 {
		return
	}
	if b, ok := (*f)[r.ErrorType]; ok && b.index < r.Index {
		return
	}
	b, ok := failure.ParseErrorBody(r.Status, r.ErrorBody)
	if !ok {
		return
	}
	if *f == nil {
		*f = firstBodies{}
	}
	(*f)[r.ErrorType] = firstBody{index: r.Index, body: b}
}

// list is the bodies in the order errorBodies gives them: by the index of
// the record each came from.
func (f firstBodies) list() []failure.ErrorBody {
	if len(f) == 0 {
		return nil
	}
	bs := make([]firstBody, 0, len(f))
	for _, b := range f {
		bs = append(bs, b)
	}
	slices.SortFunc(bs, func(a, b firstBody) int { return a.index - b.index })
	out := make([]failure.ErrorBody, len(bs))
	for i, b := range bs {
		out[i] = b.body
	}
	return out
}
