package scrape

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func TestFetchSumAndBy(t *testing.T) {
	reg := prometheus.NewRegistry()
	dec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vllm_router_policy_decisions_total"}, []string{"policy", "worker"})
	reg.MustRegister(dec)
	dec.WithLabelValues("round_robin", "http://a").Add(3)
	dec.WithLabelValues("round_robin", "http://b").Add(4)
	dec.WithLabelValues("cache_aware", "http://a").Add(5)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()

	fams, err := Fetch(context.Background(), srv.Client(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if got := fams.Sum("vllm_router_policy_decisions_total", nil); got != 12 {
		t.Fatalf("Sum = %v, want 12", got)
	}
	if got := fams.Sum("vllm_router_policy_decisions_total", map[string]string{"policy": "round_robin"}); got != 7 {
		t.Fatalf("Sum(round_robin) = %v, want 7", got)
	}
	by := fams.By("vllm_router_policy_decisions_total", "worker")
	if by["http://a"] != 8 || by["http://b"] != 4 {
		t.Fatalf("By(worker) = %v", by)
	}
	if fams.Sum("absent", nil) != 0 || fams.Has("absent") {
		t.Fatal("a missing family must sum to 0")
	}
}

func TestFetchRejectsErrorStatus(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	if _, err := Fetch(context.Background(), srv.Client(), srv.URL); err == nil {
		t.Fatal("want an error for a 404 scrape")
	}
}
