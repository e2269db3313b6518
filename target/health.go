package target

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// DefaultHealthPath is vLLM's health endpoint: 200 with an empty body once
// the engine is ready.
const DefaultHealthPath = "/health"

// Health polls a worker's health endpoint.
type Health struct {
	// Client sends the probes; nil means a client with a 2 s timeout per probe.
	Client *http.Client
	// Interval is the first gap between probes; it doubles up to 250 ms, so a
	// fast worker is seen quickly and a slow one (vLLM loading weights for
	// minutes) is not hammered.
	Interval time.Duration
}

// Wait returns nil once GET url answers 200, or an error describing the last
// probe when ctx ends first. stop, when not nil, ends the wait early: the
// process target closes it when the worker exits.
func (h Health) Wait(ctx context.Context, url string, stop <-chan struct{}) error {
	client := h.Client
	if client == nil {
		client = &http.Client{Timeout: 2 * time.Second}
	}
	gap := h.Interval
	if gap <= 0 {
		gap = 20 * time.Millisecond
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	var last error // the last probe's error
	for {
		select {
		case <-ctx.Done():
			if last == nil {
				last = errors.New("no probe completed")
			}
			return fmt.Errorf("last probe: %w", last)
		case <-stop:
			if last == nil {
				last = errors.New("no probe completed")
			}
			return fmt.Errorf("stopped waiting; last probe: %w", last)
		case <-timer.C:
		}
		err := probe(ctx, client, url)
		if err == nil {
			return nil
		}
		// A probe cut short by ctx says nothing about the worker; the one
		// before it (say, a 503 while loading) is the better reason.
		if last == nil || ctx.Err() == nil {
			last = err
		}
		timer.Reset(gap)
		gap = min(2*gap, 250*time.Millisecond)
	}
}

// probe sends one GET and wants a 200.
func probe(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("building health probe: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}
