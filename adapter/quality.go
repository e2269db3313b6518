package adapter

import (
	"context"
	"fmt"

	"github.com/autoinfer/autoinfer/adapter/gate"
	"github.com/autoinfer/autoinfer/failure"
	"github.com/autoinfer/autoinfer/target"
	"github.com/autoinfer/autoinfer/trials"
)

// gatePromptTokens is the length of generated gate prompts: long enough to
// span several KV blocks (and so a PD transfer), short enough to be cheap.
const gatePromptTokens = 96

// keepGate puts a gate's verdict (nil: no gate) or error in the observation.
func (tr *trialRun) keepGate(res *gate.Result, err error) {
	if err != nil {
		tr.obs.Err = err
		return
	}
	if res == nil {
		return
	}
	tr.gate = res
	tr.obs.Gate = &failure.QualityGate{Passed: res.Passed, KLMean: res.KLMean, KLMax: res.KLMax, Threshold: res.KLThreshold}
}

// gateVerdict sends the gate prompts to the deployment (through the router
// when there is one) and to the reference replica and compares the
// answers; nil when the trial has no gate.
func (tr *trialRun) gateVerdict(ctx context.Context, baseURL string) (*gate.Result, error) {
	g := tr.t.Gate
	if g.Reference == trials.ReferenceNone || g.Reference == "" {
		return nil, nil
	}
	refURL := g.URL
	if g.Reference == trials.ReferenceSim {
		// The reference is one more simulated engine with the target's own
		// options (profile and overrides); the spec refuses a simulated
		// reference for real servers.
		sw, ok := tr.t.Target.Options.(target.SimulatedWorkers)
		if !ok || !sw.Simulated() {
			return nil, fmt.Errorf("gate reference: target kind %s has no simulated workers to compare with", tr.t.Target.Kind)
		}
		prov, err := sw.Provisioner(tr.log)
		if err != nil {
			return nil, fmt.Errorf("gate reference: %w", err)
		}
		ref, err := prov.Provision(ctx, target.Topology{Replicas: 1, Engine: referenceEngine(tr.t.Topology.Engine)})
		if err != nil {
			return nil, fmt.Errorf("gate reference: %w", err)
		}
		defer ref.Close(context.WithoutCancel(ctx))
		refURL = ref.Workers[0].URL
	}
	cfg := gate.Config{
		Model:        tr.t.Topology.Engine.Model,
		Prompts:      g.Prompts.Count,
		Texts:        g.Prompts.List,
		PromptTokens: gatePromptTokens,
		MaxTokens:    g.MaxTokens,
		TopLogprobs:  g.TopLogprobs,
		KLThreshold:  g.KLThreshold,
		Seed:         uint64(tr.t.Seed),
	}
	res, err := gate.Run(ctx, tr.routerHTTP(), baseURL, refURL, cfg)
	if err != nil {
		return nil, fmt.Errorf("quality gate: %w", err)
	}
	return &res, nil
}
