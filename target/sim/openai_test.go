package sim_test

import (
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// The official OpenAI Go client streams a chat completion from the engine.
func TestOpenAIGoClientStreamsChat(t *testing.T) {
	t.Parallel()
	url := simtest.Start(t, sim.Options{})
	client := openai.NewClient(option.WithBaseURL(url+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	stream := client.Chat.Completions.NewStreaming(t.Context(), openai.ChatCompletionNewParams{
		Model:               model,
		Messages:            []openai.ChatCompletionMessageParamUnion{openai.UserMessage("name the cache")},
		MaxCompletionTokens: openai.Int(12),
		Temperature:         openai.Float(0),
		StreamOptions:       openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var acc openai.ChatCompletionAccumulator
	chunks := 0
	for stream.Next() {
		acc.AddChunk(stream.Current())
		chunks++
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if len(acc.Choices) != 1 {
		t.Fatalf("accumulated %d choices", len(acc.Choices))
	}
	content := acc.Choices[0].Message.Content
	if tokenizer.Count(content) != 12 || acc.Choices[0].FinishReason != "length" {
		t.Fatalf("content %q (%d tokens), finish %q; want 12 tokens and length", content, tokenizer.Count(content), acc.Choices[0].FinishReason)
	}
	if acc.Usage.CompletionTokens != 12 || acc.Usage.PromptTokens != 5 || chunks != 1+12+1 {
		t.Fatalf("usage %+v after %d chunks; want 12 completion, 5 prompt tokens, 14 chunks", acc.Usage, chunks)
	}
	if strings.HasPrefix(content, " ") {
		t.Fatalf("content starts with a space: %q", content)
	}
}
