package hostmem

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

// Limit is the memory available to this process and where the figure
// comes from.
type Limit struct {
	Bytes int64
	// Source names the file the figure was read from, for messages
	// ("MemAvailable in /proc/meminfo").
	Source string
}

// noLimit is what cgroup v1 reports for "no limit" (a page-aligned
// MaxInt64); anything above it means unlimited too.
const noLimit = 1 << 62

// Available reads the memory still available to this process from root
// (os.DirFS("/") in production): the smaller of MemAvailable and the
// cgroup's headroom. It fails only when neither can be read.
func Available(root fs.FS) (Limit, error) {
	var (
		best Limit
		errs []error
	)
	consider := func(l Limit, err error) {
		switch {
		case err != nil:
			errs = append(errs, err)
		case l.Bytes >= 0 && (best.Source == "" || l.Bytes < best.Bytes):
			best = l
		}
	}
	consider(memAvailable(root))
	if l, ok, err := cgroupHeadroom(root); ok || err != nil {
		consider(l, err)
	}
	if best.Source == "" {
		return Limit{}, fmt.Errorf("reading available memory: %w", errors.Join(errs...))
	}
	return best, nil
}

// memAvailable reads MemAvailable (kB) from /proc/meminfo.
func memAvailable(root fs.FS) (Limit, error) {
	data, err := fs.ReadFile(root, "proc/meminfo")
	if err != nil {
		return Limit{}, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		if err != nil || kb < 0 {
			return Limit{}, fmt.Errorf("/proc/meminfo: MemAvailable %q is not a size", strings.TrimSpace(rest))
		}
		return Limit{Bytes: kb << 10, Source: "MemAvailable in /proc/meminfo"}, nil
	}
	return Limit{}, errors.New("/proc/meminfo: no MemAvailable line")
}

// cgroupHeadroom is the smallest of the limits minus usage of the
// process's cgroups; ok is false when none has a memory limit (or no
// cgroup files exist).
func cgroupHeadroom(root fs.FS) (best Limit, ok bool, err error) {
	for _, dir := range cgroupDirs(root) {
		for _, f := range []struct{ limit, usage string }{
			{"memory.max", "memory.current"},                                 // v2
			{"memory.limit_in_bytes", "memory.usage_in_bytes"},               // v1, at the group
			{"memory/memory.limit_in_bytes", "memory/memory.usage_in_bytes"}, // v1, under its controller
		} {
			limit, err := readSize(root, path.Join(dir, f.limit))
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return Limit{}, false, err
			}
			if limit < 0 || limit >= noLimit {
				continue // "max": no limit here
			}
			usage, err := readSize(root, path.Join(dir, f.usage))
			if err != nil {
				return Limit{}, false, err
			}
			if l := max(limit-usage, 0); !ok || l < best.Bytes {
				best, ok = Limit{Bytes: l, Source: "/" + path.Join(dir, f.limit) + " minus usage"}, true
			}
		}
	}
	return best, ok, nil
}

// cgroupDirs are where the process's cgroup files may be: its own group's
// directory (from /proc/self/cgroup) first, then the mount's root, which is
// the group itself inside a container.
func cgroupDirs(root fs.FS) []string {
	var dirs []string
	if data, err := fs.ReadFile(root, "proc/self/cgroup"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			parts := strings.SplitN(line, ":", 3)
			if len(parts) != 3 {
				continue
			}
			if parts[0] == "0" && parts[1] == "" { // v2 unified hierarchy
				dirs = append(dirs, path.Join("sys/fs/cgroup", parts[2]))
			}
			if strings.Contains(","+parts[1]+",", ",memory,") {
				dirs = append(dirs, path.Join("sys/fs/cgroup/memory", parts[2]))
			}
		}
	}
	return append(dirs, "sys/fs/cgroup")
}

// readSize reads a cgroup size file: a byte count, or "max" (-1).
func readSize(root fs.FS, name string) (int64, error) {
	data, err := fs.ReadFile(root, name)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(data))
	if s == "max" {
		return -1, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/%s: %q is not a size", name, s)
	}
	return n, nil
}
