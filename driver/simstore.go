package driver

import (
	"github.com/autoinfer/autoinfer/driver/metrics"
)

// SimOptions tune Simulate.
type SimOptions struct {
	// Stream counts each request into the summary as it ends and drops its
	// record: Result.Requests stays empty and the records take no memory
	// (one bit per request remains). Latency percentiles are exact up to
	// ExactValues values per metric, then within metrics.PercentileRelError
	// (the summary's percentile_rel_error says which).
	Stream bool
	// ExactValues bounds the values per metric a streamed summary keeps
	// exactly; 0 means DefaultExactValues.
	ExactValues int
	// Workloads, when set, shares a streamed run's built workload with
	// the other runs given the same Workloads (a search's candidates).
	Workloads *Workloads
	// Records, with Stream, is handed each measured record once it is
	// final, in the order they become final, before the run drops it (a
	// trial spools them for its ledger row); it must not keep the pointer.
	Records func(*RequestRecord)
}

// DefaultExactValues keeps a streamed summary exact for runs of up to
// 65,536 requests' TTFTs (ITLs pass it sooner) in about 2.6 MB.
const DefaultExactValues = 1 << 16

// records are one virtual phase's request records: all of them, or, when
// streaming, only those not yet counted into the summary.
type records struct {
	src     reqSource
	all     []metrics.RequestRecord // not streaming
	live    map[int]*metrics.RequestRecord
	acc     *metrics.Accumulator
	sink    func(*metrics.RequestRecord) // streaming: takes each final record
	counted []uint64                     // streaming: bit i set once request i is counted
	// sends is the send order of requests not yet counted (a FIFO from
	// head): the oldest one bounds which records can still arrive.
	sends []int
	head  int
	sent  map[int]float64 // send offset (ms) of uncounted sent requests
}

// newRecords holds the records of src's requests; a whole source (every
// request produced) unless acc streams them, handing each to sink (when
// set) as it is counted.
func newRecords(src reqSource, acc *metrics.Accumulator, sink func(*metrics.RequestRecord)) *records {
	r := &records{src: src, acc: acc, sink: sink}
	if acc == nil {
		r.all = make([]metrics.RequestRecord, src.Len())
		for i := range r.all {
			r.all[i] = blankRecord(src.At(i), i)
		}
		return r
	}
	r.live, r.sent = map[int]*metrics.RequestRecord{}, map[int]float64{}
	r.counted = make([]uint64, (src.Len()+63)/64)
	return r
}

func blankRecord(q *Request, i int) metrics.RequestRecord {
	return metrics.RequestRecord{Index: i, SessionID: q.Session, Turn: q.Turn, InputTokens: q.InputTokens}
}

// at is request i's record.
func (r *records) at(i int) *metrics.RequestRecord {
	if r.acc == nil {
		return &r.all[i]
	}
	rec, ok := r.live[i]
	if !ok {
		b := blankRecord(r.src.At(i), i)
		rec = &b
		r.live[i] = rec
	}
	return rec
}

// sentAt notes that request i left at ms.
func (r *records) sentAt(i int, ms float64) {
	if r.acc != nil {
		r.sends = append(r.sends, i)
		r.sent[i] = ms
	}
}

// done counts request i (its record is final) when streaming; now is the
// phase's clock in ms.
func (r *records) done(i int, now float64) {
	if r.acc == nil {
		return
	}
	rec := r.at(i)
	if rec.ErrorType == errCancelled {
		// Cut short by the phase's stop (the wall clock's drain delivers
		// it), which makes it final, incomplete or not_sent, and counts it.
		return
	}
	r.acc.Add(rec)
	if r.sink != nil {
		r.sink(rec)
	}
	r.src.Drop(i)
	delete(r.live, i)
	delete(r.sent, i)
	r.counted[i/64] |= 1 << (i % 64)
	for r.head < len(r.sends) && r.isCounted(r.sends[r.head]) {
		r.head++
	}
	if r.head > 1024 && r.head*2 > len(r.sends) {
		r.sends = append(r.sends[:0], r.sends[r.head:]...)
		r.head = 0
	}
	settled := now // a request sent later leaves no earlier than now
	if r.head < len(r.sends) {
		settled = min(settled, r.sent[r.sends[r.head]])
	}
	r.acc.Settled(settled)
}

func (r *records) isCounted(i int) bool { return r.counted[i/64]&(1<<(i%64)) != 0 }

// each calls fn with every record not yet counted, in index order,
// producing the requests the source has not produced yet.
func (r *records) each(fn func(i int, rec *metrics.RequestRecord)) error {
	for i := range r.src.Len() {
		counted := r.acc != nil && r.isCounted(i)
		if !counted && r.src.Lazy() && r.src.At(i) == nil {
			if _, _, err := r.src.Next(); err != nil {
				return err
			}
		}
		if !counted {
			fn(i, r.at(i))
		}
	}
	return nil
}
