package field

import "fmt"

// MaxLen wants a string of at most n bytes; the error gives the length,
// never the value (it may be long, or a secret pasted by mistake).
func MaxLen(path, v string, n int) error {
	if len(v) > n {
		return Errorf(path, "is %d bytes long; at most %d", len(v), n)
	}
	return nil
}

// MaxItems wants a list or map of at most n entries.
func MaxItems(path string, count, n int) error {
	if count > n {
		return Errorf(path, "has %d entries; at most %d", count, n)
	}
	return nil
}

// MaxBytes wants a size in bytes of at most n, and names both in binary
// units when they are large ("2 GiB; at most 1 GiB").
func MaxBytes[T ~int | ~int64](path string, v, n T) error {
	if v > n {
		return Errorf(path, "must be ≤ %s (got %s)", Bytes(int64(n)), Bytes(int64(v)))
	}
	return nil
}

// Bytes formats a byte count for people: "512 B", "1.5 KiB", "3 GiB".
func Bytes(n int64) string {
	const units = "KMGTPE"
	if n < 1024 && n > -1024 {
		return fmt.Sprintf("%d B", n)
	}
	f, i := float64(n)/1024, 0
	for (f >= 1024 || f <= -1024) && i < len(units)-1 {
		f /= 1024
		i++
	}
	return fmt.Sprintf("%.3g %ciB", f, units[i])
}
