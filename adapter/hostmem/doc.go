// Package hostmem reads how much memory this process may still use: the
// kernel's MemAvailable, lowered by the cgroup's limit (v2 memory.max, or
// v1 memory.limit_in_bytes) minus what the cgroup already uses. It reads
// through an fs.FS rooted at "/", so tests give it a fstest.MapFS.
package hostmem
