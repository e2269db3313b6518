package sim

import (
	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// ChatMessage is one message of a chat prompt as the template sees it.
type ChatMessage struct {
	Role    string
	Content string
}

// chatRoles are the roles the template knows, in marker-id order.
var chatRoles = []string{"system", "user", "assistant", "tool", "developer"}

// roleMarker is the id of the one-token marker that opens a message of
// role: ids just past the tokenizer's id space, so they never collide with
// text. Unknown roles return -1.
func roleMarker(role string) int {
	for i, r := range chatRoles {
		if r == role {
			return tokenizer.VocabSize + i
		}
	}
	return -1
}

// ChatTemplate renders messages as the simulator's chat prompt: for every
// message one role-marker token followed by its content tokens, then one
// assistant marker as the generation prompt. A conversation's next turn
// therefore starts with the previous turn's prompt and answer, as with real
// chat templates, so multi-turn prefixes hit the prefix cache. The prompt
// has sum(1 + tokens(content)) + 1 tokens. Unknown roles render as user.
func ChatTemplate(msgs []ChatMessage) []int {
	n := 1
	for _, m := range msgs {
		n += 1 + tokenizer.Count(m.Content)
	}
	ids := make([]int, 0, n)
	for _, m := range msgs {
		mk := roleMarker(m.Role)
		if mk < 0 {
			mk = roleMarker("user")
		}
		ids = append(ids, mk)
		ids = append(ids, tokenizer.Tokenize(m.Content)...)
	}
	return append(ids, roleMarker("assistant"))
}

// ChatPromptTokens is len(ChatTemplate(msgs)) without building the ids.
func ChatPromptTokens(msgs []ChatMessage) int {
	n := 1
	for _, m := range msgs {
		n += 1 + tokenizer.Count(m.Content)
	}
	return n
}
