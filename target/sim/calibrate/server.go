package calibrate

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"

	"github.com/autoinfer/autoinfer/target/sim"
)

// Identify reads the server's identity: the first served model
// (/v1/models, required), vLLM's /version and the KV capacity its
// vllm:cache_config_info metric declares (both optional: not every
// OpenAI-compatible server has them).
func Identify(ctx context.Context, hc *http.Client, base string) (sim.CalibratedServer, error) {
	id := sim.CalibratedServer{URL: base}
	var models struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := getJSON(ctx, hc, base+"/v1/models", &models); err != nil {
		return id, err
	}
	if len(models.Data) == 0 {
		return id, fmt.Errorf("GET %s/v1/models: no model served", base)
	}
	id.Model = models.Data[0].ID
	var v struct {
		Version string `json:"version"`
	}
	if getJSON(ctx, hc, base+"/version", &v) == nil {
		id.Version = v.Version
	}
	id.NumGPUBlocks, id.BlockSize = cacheConfig(ctx, hc, base)
	return id, nil
}

func getJSON(ctx context.Context, hc *http.Client, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v); err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	return nil
}

var (
	blocksLabel = regexp.MustCompile(`num_gpu_blocks="(\d+)"`)
	sizeLabel   = regexp.MustCompile(`block_size="(\d+)"`)
)

// cacheConfig reads num_gpu_blocks and block_size from the labels of
// vllm:cache_config_info (0, 0 when the server does not expose it).
func cacheConfig(ctx context.Context, hc *http.Client, base string) (blocks, size int) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return 0, 0
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, 0
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, 0
	}
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 8<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if len(line) < 22 || line[:22] != "vllm:cache_config_info" {
			continue
		}
		if m := blocksLabel.FindStringSubmatch(line); m != nil {
			blocks, _ = strconv.Atoi(m[1])
		}
		if m := sizeLabel.FindStringSubmatch(line); m != nil {
			size, _ = strconv.Atoi(m[1])
		}
		return blocks, size
	}
	return 0, 0
}
