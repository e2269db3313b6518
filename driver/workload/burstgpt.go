package workload

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/autoinfer/autoinfer/trials/field"
)

// burstGPTModel is the model vllm bench serve keeps of a BurstGPT trace.
const burstGPTModel = "GPT-4"

// burstGPTRow is the part of a BurstGPT CSV row that is used.
type burstGPTRow struct{ in, out, line int }

// burstGPT follows vllm bench serve: the GPT-4 rows with a response, n of
// them drawn by the seed (without replacement when the file has enough,
// else with), each a synthetic prompt of the row's request tokens asking
// for its response tokens. n = 0 takes every row in file order. The
// trace's timestamps are not used (the arrival flags decide), as in vllm.
func (b builder) burstGPT() ([]Item, error) {
	rows, err := readBurstGPT(b.w.Path)
	if err != nil {
		return nil, field.Errorf("path", "%s: %v", b.w.Path, err)
	}
	pick := make([]int, len(rows))
	for i := range pick {
		pick[i] = i
	}
	r := b.src("sample", 0)
	switch {
	case b.n > len(rows):
		pick = make([]int, b.n)
		for i := range pick {
			pick[i] = r.IntN(len(rows))
		}
	case b.n > 0:
		pick = r.Perm(len(rows))[:b.n]
	}
	items := make([]Item, len(pick))
	for i, k := range pick {
		it := single(i)
		it.Prompt = b.tok.Generate(b.src("request", i), rows[k].in)
		it.InputTokens = b.tok.Count(it.Prompt)
		it.OutputTokens, it.Line = rows[k].out, rows[k].line
		items[i] = it
	}
	return items, nil
}

func readBurstGPT(path string) ([]burstGPTRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rd := csv.NewReader(f)
	header, err := rd.Read()
	if err != nil {
		return nil, fmt.Errorf("reading the header: %w", err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.TrimSpace(h)] = i
	}
	for _, want := range []string{"Model", "Request tokens", "Response tokens"} {
		if _, ok := col[want]; !ok {
			return nil, fmt.Errorf("header: no %q column (want BurstGPT's Timestamp,Model,Request tokens,Response tokens,…)", want)
		}
	}
	var rows []burstGPTRow
	for line := 2; ; line++ {
		rec, err := rd.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if strings.TrimSpace(rec[col["Model"]]) != burstGPTModel {
			continue
		}
		in, err1 := strconv.Atoi(strings.TrimSpace(rec[col["Request tokens"]]))
		out, err2 := strconv.Atoi(strings.TrimSpace(rec[col["Response tokens"]]))
		if err := errors.Join(err1, err2); err != nil || in < 0 {
			return nil, fmt.Errorf("line %d: token counts: %v", line, err)
		}
		if out > 0 && in > 0 {
			rows = append(rows, burstGPTRow{in: in, out: out, line: line})
		}
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("no %s rows with request and response tokens", burstGPTModel)
	}
	return rows, nil
}
