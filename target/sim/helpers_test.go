package sim_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/autoinfer/autoinfer/target/scrape"
)

// post sends body as JSON to url and returns status and body.
func post(t testing.TB, url string, body any, header ...string) (int, []byte) {
	t.Helper()
	return postVia(t, http.DefaultClient, url, body, header...)
}

// postVia is post through client c (an in-memory network's inside a
// synctest bubble).
func postVia(t testing.TB, c *http.Client, url string, body any, header ...string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case string:
		rd = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(http.MethodPost, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading %s: %v", url, err)
	}
	return resp.StatusCode, out
}

func get(t testing.TB, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

// sseEvent is one received data frame and when it arrived.
type sseEvent struct {
	data string
	at   time.Time
}

// streamPost posts body and returns the data frames with arrival times.
func streamPost(t testing.TB, url string, body any) (start time.Time, events []sseEvent) {
	t.Helper()
	return streamPostVia(t, http.DefaultClient, url, body)
}

func streamPostVia(t testing.TB, c *http.Client, url string, body any) (start time.Time, events []sseEvent) {
	t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	resp, err := c.Post(url, "application/json", bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST %s: status %d: %s", url, resp.StatusCode, b)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "data: ") {
			events = append(events, sseEvent{data: strings.TrimPrefix(line, "data: "), at: time.Now()})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading stream: %v", err)
	}
	return start, events
}

// metrics scrapes url's /metrics through c.
func metrics(t testing.TB, c *http.Client, url string) scrape.Families {
	t.Helper()
	f, err := scrape.Fetch(t.Context(), c, url+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// metricValue sums every series of a metric family on url's /metrics.
func metricValue(t testing.TB, url, name string) float64 {
	t.Helper()
	return metrics(t, http.DefaultClient, url).Sum(name, nil)
}

// metricWhere sums the series of name whose labels include match.
func metricWhere(t testing.TB, url, name string, match map[string]string) float64 {
	t.Helper()
	return metrics(t, http.DefaultClient, url).Sum(name, match)
}
