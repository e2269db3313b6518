package trials

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/autoinfer/autoinfer/driver/workload"
	"github.com/autoinfer/autoinfer/target"
	"github.com/autoinfer/autoinfer/trials/field"
)

// StreamID names a trial's request stream: its name before any matrix
// suffix, so every trial of a matrix sends the same bytes.
func (t Trial) StreamID() string {
	name, _, _ := strings.Cut(t.Name, "/")
	return name
}

// readWorkloads is the part of Load that reads files: it roots every
// trial's relative workload paths at the spec's directory (SpecDir), opens
// and parses each trace and dataset file as a run would (format, every
// line, lengths > 0), and refuses a trial whose longest request cannot fit
// its engines' context (max_model_len, KV capacity) where the target knows
// them before running: such a trial can only fail. Trials sharing a
// workload are checked once.
func readWorkloads(ts []Trial, specPath string, data []byte) error {
	dir := filepath.Dir(specPath)
	var doc yaml.Node
	_ = yaml.Unmarshal(data, &doc) // parsed before; only the lines are wanted
	line := func(path string) int { return lineOf(deref(&doc), path) }
	c := &workloadChecks{files: map[string]error{}, longest: map[string]longestResult{}, toks: map[string]tokResult{}}
	var fields []*FieldError
	for i := range ts {
		ts[i].SpecDir = dir
		for _, fe := range c.check(ts[i]) {
			fe.Line, fe.Trial = line(fe.Path), ts[i].Name
			fields = append(fields, fe)
		}
	}
	if len(fields) > 0 {
		return &SpecError{File: specPath, Fields: sortFields(fields, len(ts))}
	}
	return nil
}

type longestResult struct {
	l   workload.Longest
	err error
}

type tokResult struct {
	tok workload.Tokenizer
	err error
}

// workloadChecks caches what was read: a matrix repeats one workload.
type workloadChecks struct {
	files   map[string]error
	longest map[string]longestResult
	toks    map[string]tokResult
}

func (c *workloadChecks) tokenizer(name string) (workload.Tokenizer, error) {
	r, ok := c.toks[name]
	if !ok {
		r.tok, r.err = workload.LoadTokenizer(name)
		c.toks[name] = r
	}
	return r.tok, r.err
}

func (c *workloadChecks) check(t Trial) []*FieldError {
	w := t.Workload.ResolvePaths(t.SpecDir)
	tok, err := c.tokenizer(w.Tokenizer)
	if err != nil {
		return nested("workload", err)
	}
	key, _ := json.Marshal(w) // a Workload always encodes
	if len(w.Files()) > 0 {
		ferr, seen := c.files[string(key)]
		if !seen {
			_, ferr = workload.Check(w, tok)
			c.files[string(key)] = ferr
		}
		if ferr != nil {
			fields := nested("workload", ferr)
			for _, f := range fields {
				if f.Path == "workload.path" {
					f.Msg = w.Path + ": " + f.Msg // which of the spec's files
				}
			}
			return fields
		}
	}
	cl, ok := t.Target.Options.(target.ContextLimited)
	if !ok {
		return nil // the limits are the running server's; the engine's refusals are typed (ContextLengthExceeded)
	}
	lim, err := cl.ContextLimits(t.Topology.Engine)
	if err != nil || lim.MaxModelLen == 0 && lim.KVTokens == 0 {
		return nil // the target's own validation names a bad profile
	}
	lkey := fmt.Sprintf("%s\x00%d\x00%d\x00%s", key, t.Workload.NumPrompts, t.Seed, t.StreamID())
	r, seen := c.longest[lkey]
	if !seen {
		r.l, r.err = workload.LongestRequest(w, t.Workload.NumPrompts, t.Seed, t.StreamID(), tok)
		c.longest[lkey] = r
	}
	if r.err != nil {
		return nested("workload", r.err)
	}
	return contextProblems(r.l, lim)
}

// nested turns the *field.Errors of the workload's checks into the spec's
// field errors under prefix.
func nested(prefix string, err error) []*FieldError {
	var l field.Errors
	l.Nest(prefix, err)
	var out []*FieldError
	for _, e := range field.Flatten(l.Err()) {
		fe := e.(*field.Error) // Nest makes every problem one
		out = append(out, &FieldError{Path: fe.Path, Msg: fe.Msg})
	}
	return out
}

// contextProblems compares the longest request with the limits.
func contextProblems(l workload.Longest, lim target.Limits) []*FieldError {
	where, path := "a request", "workload"
	if l.File != "" {
		where, path = fmt.Sprintf("%s line %d", l.File, l.Line), "workload.path"
	}
	ask := fmt.Sprintf("%s asks for %d tokens (%d prompt + %d max_tokens)", where, l.Tokens(), l.InputTokens, l.OutputTokens)
	switch {
	case lim.MaxModelLen > 0 && l.Tokens() > lim.MaxModelLen:
		return []*FieldError{{Path: path, Msg: fmt.Sprintf("%s but the engine's max_model_len is %d (%s): the engine refuses it every run; raise topology.engine.max_model_len to at least %d or leave the request out",
			ask, lim.MaxModelLen, lim.Source, l.Tokens())}}
	case lim.KVTokens > 0 && l.Tokens() > lim.KVTokens:
		return []*FieldError{{Path: path, Msg: fmt.Sprintf("%s but one engine's KV cache holds %d tokens (%s): it can never be scheduled; raise topology.engine.num_gpu_blocks_override or leave the request out",
			ask, lim.KVTokens, lim.Source)}}
	}
	return nil
}
