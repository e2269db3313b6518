package hf

// byteToRune is GPT-2's bytes_to_unicode: printable Latin-1 bytes map to
// themselves, the other bytes (controls, space, …) to code points from
// U+0100 on, so every byte is one visible character of the vocabulary.
var byteToRune, runeToByte = func() ([256]rune, map[rune]byte) {
	var b2r [256]rune
	r2b := make(map[rune]byte, 256)
	next := rune(256)
	for b := range 256 {
		r := rune(b)
		printable := (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
		if !printable {
			r = next
			next++
		}
		b2r[b] = r
		r2b[r] = byte(b)
	}
	return b2r, r2b
}()

// byteLevel maps s's UTF-8 bytes to their characters.
func byteLevel(s string) string {
	out := make([]rune, len(s))
	for i := range len(s) {
		out[i] = byteToRune[s[i]]
	}
	return string(out)
}
