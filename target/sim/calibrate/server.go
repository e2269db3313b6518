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
	"strings"

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
	found := false
	scrape(ctx, hc, base, func(line string) bool {
		if !strings.HasPrefix(line, "vllm:cache_config_info") {
			return true
		}
		if m := blocksLabel.FindStringSubmatch(line); m != nil {
			blocks, _ = strconv.Atoi(m[1])
		}
		if m := sizeLabel.FindStringSubmatch(line); m != nil {
			size, _ = strconv.Atoi(m[1])
		}
		found = true
		return false
	})
	if !found {
		return 0, 0
	}
	return blocks, size
}

// scrape reads the server's /metrics line by line into fn until fn
// returns false; it reports whether the whole exposition was read or fn
// stopped it (false: no metrics, or a failed read).
func scrape(ctx context.Context, hc *http.Client, base string, fn func(line string) bool) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return false
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false
	}
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 8<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if !fn(sc.Text()) {
			return true
		}
	}
	return sc.Err() == nil
}
