package stepmodel

import (
	"bufio"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
)

// readRows reads a testdata CSV: comment lines (#) and the header skipped.
func readRows(t *testing.T, name string) [][]string {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows [][]string
	sc := bufio.NewScanner(f)
	header := true
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		if header {
			header = false
			continue
		}
		rows = append(rows, strings.Split(line, ","))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func atof(t *testing.T, s string) float64 {
	t.Helper()
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// heldOutRows are the measured linear rows no table was fitted on.
func heldOutRows(t *testing.T) map[PairKey][]Point {
	t.Helper()
	out := map[PairKey][]Point{}
	for _, r := range readRows(t, "linear_heldout.csv") {
		k := PairKey{r[0], r[1], atoi(t, r[2])}
		out[k] = append(out[k], Point{atof(t, r[3]), atof(t, r[4])})
	}
	return out
}

// Acceptance 1a of issue 12: the compact linear-layer tables reproduce
// vidur's measured rows they were not fitted on: mean within 3 % over all
// tables. Measured rows are noisy (between 64 and 512 tokens neighbouring
// rows differ by ~4 % from GEMM tile effects), so single tables may miss 3 %;
// none may miss 5 %.
func TestLinearTablesReproduceHeldOutRows(t *testing.T) {
	t.Parallel()
	rows := heldOutRows(t)
	if len(rows) != len(linearTables) {
		t.Fatalf("held-out rows for %d tables, %d tables shipped", len(rows), len(linearTables))
	}
	sum, n := 0.0, 0
	for k, pts := range rows {
		tab, ok := linearTables[k]
		if !ok {
			t.Fatalf("no table for %v", k)
		}
		e := meanAbsErr(pts, tab.Eval)
		sum += e * float64(len(pts))
		n += len(pts)
		if e > 0.05 {
			t.Errorf("%v: mean error %.2f %% on %d held-out rows", k, 100*e, len(pts))
		}
	}
	mean := sum / float64(n)
	t.Logf("mean error over %d held-out rows of %d tables: %.2f %%", n, len(rows), 100*mean)
	if mean > 0.03 {
		t.Errorf("mean error %.2f %% over all held-out rows, want <= 3 %%", 100*mean)
	}
}

// Acceptance 1b: attention reproduces every measured A100 row within 10 %.
func TestAttentionReproducesMeasuredRows(t *testing.T) {
	t.Parallel()
	g, _ := LookupGPU("a100")
	var rows []AttentionRow
	for _, r := range readRows(t, "attention_a100_llama3_8b.csv") {
		rows = append(rows, AttentionRow{Decode: r[0] == "decode", Batch: atoi(t, r[1]), Chunk: atoi(t, r[2]), KV: atoi(t, r[3]), AttnMs: atof(t, r[4])})
	}
	if len(rows) < 40 {
		t.Fatalf("only %d attention rows", len(rows))
	}
	worst, sum := 0.0, 0.0
	for i, e := range attention.AttentionErrors(attentionArch, g, 1, rows) {
		worst = math.Max(worst, math.Abs(e))
		sum += math.Abs(e)
		// The fit is minimax: its worst rows sit on the bound, up to the
		// generated file's 5 significant digits.
		if math.Abs(e) > 0.1+1e-3 {
			t.Errorf("%+v: %+.2f %%", rows[i], 100*e)
		}
	}
	t.Logf("attention: mean %.2f %%, worst %.2f %% over %d rows", 100*sum/float64(len(rows)), 100*worst, len(rows))
}

// Acceptance 1c: on a grid of 61 steps per measured profile (decode batches
// 1–512 at contexts 128–8192, prefill chunks 64–8192, chunks after a cached
// prefix, mixed steps) the model's block time is within 5 % on average of
// vidur's summation rule applied to the measured rows.
func TestGridMatchesVidurSummation(t *testing.T) {
	t.Parallel()
	type acc struct {
		sum, worst float64
		n          int
	}
	per := map[PairKey]*acc{}
	for _, r := range readRows(t, "vidur_grid.csv") {
		k := PairKey{r[0], r[1], atoi(t, r[2])}
		b := Batch{DecodeSeqs: atoi(t, r[3]), DecodeContext: atoi(t, r[4])}
		if r[5] != "" {
			for _, c := range strings.Split(r[5], ";") {
				tok, pre, _ := strings.Cut(c, ":")
				b.Chunks = append(b.Chunks, Chunk{Tokens: atoi(t, tok), Prefix: atoi(t, pre)})
			}
		}
		g, err := LookupGPU(k.GPU)
		if err != nil {
			t.Fatal(err)
		}
		m, err := NewModel(archs[k.Model], g, k.TP)
		if err != nil {
			t.Fatal(err)
		}
		e := math.Abs(m.BlockMs(&b)/atof(t, r[6]) - 1)
		a := per[k]
		if a == nil {
			a = &acc{}
			per[k] = a
		}
		a.sum += e
		a.worst = math.Max(a.worst, e)
		a.n++
	}
	if len(per) < 20 {
		t.Fatalf("grid covers %d profiles", len(per))
	}
	worstMean, all, steps := 0.0, 0.0, 0
	for k, a := range per {
		worstMean = math.Max(worstMean, a.sum/float64(a.n))
		all += a.sum
		steps += a.n
		if a.n < 60 {
			t.Errorf("%v: %d grid steps, want >= 60", k, a.n)
		}
		if mean := a.sum / float64(a.n); mean > 0.05 {
			t.Errorf("%v: mean %.2f %% (worst %.2f %%) against vidur's summation", k, 100*mean, 100*a.worst)
		}
	}
	t.Logf("%d profiles × %d steps: mean %.2f %%, worst profile mean %.2f %%", len(per), steps/len(per), 100*all/float64(steps), 100*worstMean)
}
