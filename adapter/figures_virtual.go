package adapter

import (
	"github.com/autoinfer/autoinfer/adapter/virtual"
	"github.com/autoinfer/autoinfer/ledger"
)

// virtualFigures are a virtual row's window figures, from the simulated
// engines' own counts over the measured phase: the same figures a real row
// reads from the workers' metrics (the engine lag ratio excepted: virtual
// engines run on their own clock, never late).
func virtualFigures(ws []virtual.EngineWindow) ledger.Window {
	var engines []ledger.EngineFigure
	var total engineDeltas
	for _, w := range ws {
		d := engineDeltas{hits: ptr(w.PrefixHits), queries: ptr(w.PrefixQueries), preempt: ptr(w.Preemptions),
			pullsOK: ptr(w.KVPullsOK), pullsFailed: ptr(w.KVPullsFailed), cpuHits: ptr(w.CPUTierHits)}
		total.add(d)
		ef := ledger.EngineFigure{Worker: w.URL, Figures: d.figures()}
		ef.KVUsageMean = ptr(w.KVUsageMean)
		if w.Stepped {
			ef.KVUsagePeak = ptr(w.KVUsagePeak)
		}
		engines = append(engines, ef)
	}
	return totalled(engines, total)
}
