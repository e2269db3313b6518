package hf

import "testing"

// tinyBPE is a byte-level BPE tokenizer.json of a few tokens.
const tinyBPE = `{"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2,"Ġ":3},"merges":["a b"]},
"pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false,"use_regex":true},
"decoder":{"type":"ByteLevel"},"added_tokens":[{"id":4,"content":"<s>","special":true}]}`

// A tokenizer.json of any bytes loads or fails with an error, never a
// panic; a loaded one encodes text to ids within its vocabulary.
func FuzzParse(f *testing.F) {
	f.Add([]byte(tinyBPE), "ab a<s>b")
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{},"merges":[]}}`), "x")
	f.Add([]byte(`{"model":{"type":"WordPiece"}}`), "")
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{"a":0},"merges":[["a","a"]]},"normalizer":{"type":"Sequence","normalizers":[{"type":"NFC"}]}}`), "aa")
	f.Fuzz(func(t *testing.T, data []byte, text string) {
		tok, err := Parse(data)
		if err != nil {
			return
		}
		if len(text) > 256 {
			text = text[:256]
		}
		for _, id := range tok.Encode(text) {
			if id < 0 {
				t.Fatalf("negative id %d for %q", id, text)
			}
		}
	})
}
