package router

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/autoinfer/autoinfer/router/routertest"
)

// 6. The official OpenAI Go client streams through the router exactly as it
// streams from the worker directly.
func TestAcceptanceOpenAIClientStreamsUnchanged(t *testing.T) {
	t.Parallel()
	e := loopback(t)
	ws := e.simWorkers(2)
	r, base := e.router(testConfig("cache_aware", urls(ws)...))
	ctx := context.Background()

	type result struct {
		text             string
		chunks           int
		prompt, complete int64
	}
	stream := func(baseURL string) result {
		c := openai.NewClient(option.WithBaseURL(baseURL+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0), option.WithHTTPClient(e.HTTP()),
			option.WithHeader(RunIDHeader, "openai-run"))
		s := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
			Model:               simModel,
			Messages:            []openai.ChatCompletionMessageParamUnion{openai.UserMessage("tell me about routers")},
			MaxCompletionTokens: openai.Int(24),
			Temperature:         openai.Float(0),
			StreamOptions:       openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
		})
		var res result
		var sb strings.Builder
		acc := openai.ChatCompletionAccumulator{}
		for s.Next() {
			chunk := s.Current()
			acc.AddChunk(chunk)
			res.chunks++
			for _, ch := range chunk.Choices {
				sb.WriteString(ch.Delta.Content)
			}
		}
		if err := s.Err(); err != nil {
			t.Fatalf("streaming from %s: %v", baseURL, err)
		}
		res.text, res.prompt, res.complete = sb.String(), acc.Usage.PromptTokens, acc.Usage.CompletionTokens
		return res
	}
	direct, routed := stream(ws[0].URL), stream(base)
	if direct.text == "" || direct.complete != 24 {
		t.Fatalf("direct stream looks wrong: %+v", direct)
	}
	if routed != direct {
		t.Fatalf("through the router %+v, direct %+v", routed, direct)
	}
	// The client stops reading at [DONE]; the handler records the run's
	// usage a moment later, when the relay returns.
	routertest.Eventually(t, 5*time.Second, func() error {
		if got := testutil.ToFloat64(r.m.runCompletion.WithLabelValues("openai-run")); got != 24 {
			return fmt.Errorf("run completion tokens from the usage chunk = %v, want 24", got)
		}
		return nil
	})
}

// Acceptance 6 of issue 13: the official OpenAI Go client, given the API
// key, streams through a keyed router; without it (or with another) it gets
// 401 in OpenAI's error shape.
func TestAcceptanceOpenAIClientWithAPIKey(t *testing.T) {
	t.Parallel()
	e := loopback(t)
	ws := e.simWorkers(1)
	r, base := e.router(testConfig("round_robin", urls(ws)...), WithSecrets(Secrets{APIKey: testClientKey}))
	ctx := context.Background()
	stream := func(key string) (string, error) {
		c := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0), option.WithHTTPClient(e.HTTP()))
		s := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
			Model:               simModel,
			Messages:            []openai.ChatCompletionMessageParamUnion{openai.UserMessage("keyed")},
			MaxCompletionTokens: openai.Int(8),
		})
		var sb strings.Builder
		for s.Next() {
			for _, ch := range s.Current().Choices {
				sb.WriteString(ch.Delta.Content)
			}
		}
		return sb.String(), s.Err()
	}
	text, err := stream(testClientKey)
	if err != nil || text == "" {
		t.Fatalf("with the key: %q, %v", text, err)
	}
	for _, key := range []string{"", "wrong-key"} {
		_, err := stream(key)
		apiErr, ok := errors.AsType[*openai.Error](err)
		if !ok || apiErr.StatusCode != 401 || apiErr.Type != ErrTypeUnauthorized {
			t.Errorf("with key %q: %v, want a 401 %s error", key, err, ErrTypeUnauthorized)
		}
	}
	keyed := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey(testClientKey), option.WithHTTPClient(e.HTTP()))
	models, err := keyed.Models.List(ctx)
	if err != nil || len(models.Data) == 0 {
		t.Errorf("listing models with the key: %v", err)
	}
	stillServes(t, e, r, base, clientAuth...)
}
