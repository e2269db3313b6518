package hostmem

import (
	"os"
	"strings"
	"testing"
	"testing/fstest"
)

const meminfo = "MemTotal:       32000000 kB\nMemFree:         1000000 kB\nMemAvailable:    8000000 kB\n"

func file(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }

func TestAvailable(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fs     fstest.MapFS
		want   int64
		source string
	}{
		{"meminfo only", fstest.MapFS{"proc/meminfo": file(meminfo)}, 8000000 << 10, "MemAvailable in /proc/meminfo"},
		{"cgroup v2 lower", fstest.MapFS{
			"proc/meminfo": file(meminfo), "proc/self/cgroup": file("0::/job\n"),
			"sys/fs/cgroup/job/memory.max": file("2147483648\n"), "sys/fs/cgroup/job/memory.current": file("1073741824\n"),
		}, 1 << 30, "/sys/fs/cgroup/job/memory.max minus usage"},
		{"cgroup v2 unlimited", fstest.MapFS{
			"proc/meminfo": file(meminfo), "proc/self/cgroup": file("0::/\n"),
			"sys/fs/cgroup/memory.max": file("max\n"), "sys/fs/cgroup/memory.current": file("5\n"),
		}, 8000000 << 10, "MemAvailable in /proc/meminfo"},
		{"cgroup v1: the group's limit, not the root's", fstest.MapFS{
			"proc/meminfo": file(meminfo), "proc/self/cgroup": file("4:memory:/box/1\n0::/\n"),
			"sys/fs/cgroup/memory/memory.limit_in_bytes":       file("9223372036854771712\n"),
			"sys/fs/cgroup/memory/memory.usage_in_bytes":       file("100\n"),
			"sys/fs/cgroup/memory/box/1/memory.limit_in_bytes": file("3000\n"),
			"sys/fs/cgroup/memory/box/1/memory.usage_in_bytes": file("1000\n"),
		}, 2000, "/sys/fs/cgroup/memory/box/1/memory.limit_in_bytes minus usage"},
		{"over its limit", fstest.MapFS{
			"proc/meminfo": file(meminfo), "sys/fs/cgroup/memory.max": file("10\n"), "sys/fs/cgroup/memory.current": file("20\n"),
		}, 0, "/sys/fs/cgroup/memory.max minus usage"},
	} {
		got, err := Available(tc.fs)
		if err != nil || got.Bytes != tc.want || got.Source != tc.source {
			t.Errorf("%s: Available = %+v, %v; want %d from %s", tc.name, got, err, tc.want, tc.source)
		}
	}
}

func TestAvailableErrors(t *testing.T) {
	if _, err := Available(fstest.MapFS{}); err == nil {
		t.Error("no files: want an error")
	}
	_, err := Available(fstest.MapFS{"proc/meminfo": file("MemAvailable: lots\n")})
	if err == nil || !strings.Contains(err.Error(), "MemAvailable") {
		t.Errorf("bad meminfo: err %v", err)
	}
}

// On this machine the real files give a figure (Linux only).
func TestAvailableHere(t *testing.T) {
	if _, err := os.Stat("/proc/meminfo"); err != nil {
		t.Skip("no /proc/meminfo")
	}
	l, err := Available(os.DirFS("/"))
	if err != nil || l.Bytes <= 0 {
		t.Fatalf("Available = %+v, %v", l, err)
	}
	t.Logf("%d MiB available (%s)", l.Bytes>>20, l.Source)
}
