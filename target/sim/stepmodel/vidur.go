package stepmodel

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// linearOps are the mlp.csv operations vidur sums into one block's
// non-attention time (COLUMNS.md, section 5; emb is profiled but unused).
var linearOps = []string{"input_layernorm", "attn_pre_proj", "attn_rope", "attn_post_proj",
	"post_attention_layernorm", "mlp_up_proj", "mlp_act", "mlp_down_proj", "add"}

// vidurModel maps vidur's model directory to the short name used in
// profile names.
type vidurModel struct{ Dir, Short string }

// VidurModels are the models with measured linear layers in vidur's data.
var VidurModels = []vidurModel{
	{"meta-llama/Meta-Llama-3-8B", "llama3-8b"}, {"meta-llama/Llama-2-7b-hf", "llama2-7b"},
	{"meta-llama/Llama-2-70b-hf", "llama2-70b"}, {"meta-llama/Meta-Llama-3-70B", "llama3-70b"},
	{"codellama/CodeLlama-34b-Instruct-hf", "codellama-34b"}, {"Qwen/Qwen-72B", "qwen-72b"},
	{"internlm/internlm-20b", "internlm-20b"}, {"microsoft/phi-2", "phi-2"},
}

// MeasuredGPUs are the GPUs with vidur measurements.
var MeasuredGPUs = []string{"h100", "a100"}

// PairKey names one (GPU, model, TP) linear table.
type PairKey struct {
	GPU, Model string
	TP         int
}

func (k PairKey) String() string { return fmt.Sprintf("%s/%s/tp%d", k.GPU, k.Model, k.TP) }

// Vidur is the part of vidur's published profiling data the calibration
// reads.
type Vidur struct {
	Archs map[string]Arch // by short model name
	// Linear holds each table's measured rows in file order: tokens and the
	// sum of the linear ops' medians per layer, in ms.
	Linear map[PairKey][]Point
	// AllReduce holds all-reduce medians by network and TP: bytes → ms.
	AllReduce map[string][]Point
	// Attention are the measured A100 Llama-3-8B attention rows.
	Attention []AttentionRow
}

// AttentionRow is one measured attention row (per layer, ms).
type AttentionRow struct {
	Decode           bool
	Batch, Chunk, KV int
	AttnMs, KVSaveMs float64
}

// ReadVidur reads the calibration bundle at dir (see its README.md).
func ReadVidur(dir string) (*Vidur, error) {
	v := &Vidur{Archs: map[string]Arch{}, Linear: map[PairKey][]Point{}, AllReduce: map[string][]Point{}}
	for _, m := range VidurModels {
		a, err := readVidurConfig(filepath.Join(dir, "model_configs", m.Dir+".json"), m.Short)
		if err != nil {
			return nil, err
		}
		v.Archs[m.Short] = a
		for _, g := range MeasuredGPUs {
			if err := v.readMLP(filepath.Join(dir, "compute", g, m.Dir, "mlp.csv"), g, m.Short); err != nil {
				return nil, err
			}
		}
	}
	for _, net := range []string{"h100_dgx", "a100_dgx"} {
		if err := v.readAllReduce(filepath.Join(dir, "network", net, "all_reduce.csv"), net); err != nil {
			return nil, err
		}
	}
	rows, err := readAttentionExtract(filepath.Join(dir, "extracts", "a100_llama3_8b_attn_extract.csv"))
	if err != nil {
		return nil, err
	}
	v.Attention = rows
	return v, nil
}

func readVidurConfig(path, short string) (Arch, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Arch{}, err
	}
	var c struct {
		Layers       int  `json:"num_layers"`
		Heads        int  `json:"num_q_heads"`
		KVHeads      int  `json:"num_kv_heads"`
		Hidden       int  `json:"embedding_dim"`
		HeadDim      int  `json:"head_dim"`
		Intermediate int  `json:"mlp_hidden_dim"`
		Vocab        int  `json:"vocab_size"`
		Gated        bool `json:"use_gated_mlp"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return Arch{}, fmt.Errorf("%s: %w", path, err)
	}
	a := Arch{Name: short, Layers: c.Layers, Hidden: c.Hidden, Heads: c.Heads, KVHeads: c.KVHeads, HeadDim: c.HeadDim,
		Intermediate: c.Intermediate, Vocab: c.Vocab, Gated: c.Gated}
	if a.HeadDim == 0 && a.Heads > 0 {
		a.HeadDim = a.Hidden / a.Heads
	}
	if err := a.Validate(); err != nil {
		return Arch{}, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}

// readCSV returns the header index and the rows of a CSV file.
func readCSV(path string) (map[string]int, [][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	head, err := r.Read()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	idx := map[string]int{}
	for i, h := range head {
		idx[h] = i
	}
	var rows [][]string
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		rows = append(rows, rec)
	}
	return idx, rows, nil
}

func (v *Vidur) readMLP(path, gpu, model string) error {
	idx, rows, err := readCSV(path)
	if err != nil {
		return err
	}
	for _, col := range []string{"num_tokens", "num_tensor_parallel_workers"} {
		if _, ok := idx[col]; !ok {
			return fmt.Errorf("%s: no column %s", path, col)
		}
	}
	for n, rec := range rows {
		tok, err1 := strconv.Atoi(rec[idx["num_tokens"]])
		tp, err2 := strconv.Atoi(rec[idx["num_tensor_parallel_workers"]])
		if err1 != nil || err2 != nil {
			return fmt.Errorf("%s: row %d: bad num_tokens or num_tensor_parallel_workers", path, n+2)
		}
		sum := 0.0
		for _, op := range linearOps {
			i, ok := idx["time_stats."+op+".median"]
			if !ok || rec[i] == "" {
				continue // phi-2 has no post_attention_layernorm
			}
			x, err := strconv.ParseFloat(rec[i], 64)
			if err != nil {
				return fmt.Errorf("%s: row %d: %s: %w", path, n+2, op, err)
			}
			sum += x
		}
		k := PairKey{gpu, model, tp}
		v.Linear[k] = append(v.Linear[k], Point{float64(tok), sum})
	}
	return nil
}

func (v *Vidur) readAllReduce(path, net string) error {
	idx, rows, err := readCSV(path)
	if err != nil {
		return err
	}
	for n, rec := range rows {
		w, _ := strconv.Atoi(rec[idx["num_workers"]])
		dpn, _ := strconv.Atoi(rec[idx["devices_per_node"]])
		if w != dpn { // single-node TP groups only
			continue
		}
		size, err1 := strconv.ParseFloat(rec[idx["size"]], 64)
		ms, err2 := strconv.ParseFloat(rec[idx["time_stats.all_reduce.median"]], 64)
		if err1 != nil || err2 != nil {
			return fmt.Errorf("%s: row %d: bad size or median", path, n+2)
		}
		k := allReduceKey(net, w)
		v.AllReduce[k] = append(v.AllReduce[k], Point{size, ms})
	}
	for k := range v.AllReduce {
		slices.SortStableFunc(v.AllReduce[k], func(a, b Point) int { return cmpFloat(a.X, b.X) })
	}
	return nil
}

func allReduceKey(net string, tp int) string { return net + "/tp" + strconv.Itoa(tp) }

func readAttentionExtract(path string) ([]AttentionRow, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rows []AttentionRow
	for n, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, ",")
		if len(f) != 6 {
			return nil, fmt.Errorf("%s: line %d: want 6 fields", path, n+1)
		}
		var r AttentionRow
		r.Decode = f[0] == "decode"
		var e [5]error
		r.Batch, e[0] = strconv.Atoi(f[1])
		r.Chunk, e[1] = strconv.Atoi(f[2])
		r.KV, e[2] = strconv.Atoi(f[3])
		r.AttnMs, e[3] = strconv.ParseFloat(f[4], 64)
		r.KVSaveMs, e[4] = strconv.ParseFloat(f[5], 64)
		if err := errors.Join(e[:]...); err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", path, n+1, err)
		}
		rows = append(rows, r)
	}
	return rows, nil
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
