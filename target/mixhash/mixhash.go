package mixhash

// Mix64 is splitmix64's finaliser: it spreads every input bit over the whole
// word, so nearby inputs (consecutive positions, "url:1" and "url:2") land
// far apart.
func Mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// FNV64a is FNV-1a over s without allocating (hash/fnv needs a []byte).
// On its own it clusters short, similar strings; callers that need spread
// pass it through Mix64.
func FNV64a(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// String hashes s with FNV-1a and finalises it with Mix64.
func String(s string) uint64 { return Mix64(FNV64a(s)) }
