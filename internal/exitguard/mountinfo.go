package exitguard

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// mountEntry is what the guard needs of one line of a mount table.
type mountEntry struct {
	id           uint64
	major, minor uint64
	dir          string
	fstype       string
}

func (e mountEntry) fuse() bool {
	base, _, _ := strings.Cut(e.fstype, ".")
	return base == "fuse" || base == "fuseblk"
}

// mountTable reads the guard's mount table, which is its parent's: the
// guard never leaves the parent's mount namespace.
func mountTable() ([]mountEntry, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var out []mountEntry
	for _, line := range strings.Split(string(b), "\n") {
		if e, ok := parseMountLine(line); ok {
			out = append(out, e)
		}
	}
	return out, nil
}

// parseMountLine reads "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS... - TYPE ...".
func parseMountLine(line string) (mountEntry, bool) {
	f := strings.Fields(line)
	if len(f) < 7 {
		return mountEntry{}, false
	}
	var e mountEntry
	var err error
	if e.id, err = strconv.ParseUint(f[0], 10, 64); err != nil {
		return mountEntry{}, false
	}
	maj, min, ok := strings.Cut(f[2], ":")
	if !ok {
		return mountEntry{}, false
	}
	if e.major, err = strconv.ParseUint(maj, 10, 64); err != nil {
		return mountEntry{}, false
	}
	if e.minor, err = strconv.ParseUint(min, 10, 64); err != nil {
		return mountEntry{}, false
	}
	e.dir = unescapeMount(f[4])
	for i := 5; i+1 < len(f); i++ {
		if f[i] == "-" {
			e.fstype = f[i+1]
			break
		}
	}
	return e, true
}

// unescapeMount undoes the kernel's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// topMount is the mount at dir that a path lookup reaches: the last one
// mounted there.
func topMount(table []mountEntry, dir string) (mountEntry, error) {
	var top mountEntry
	found := false
	for _, e := range table {
		if e.dir == dir {
			top, found = e, true
		}
	}
	if !found {
		return mountEntry{}, fmt.Errorf("nothing is mounted at %s", dir)
	}
	return top, nil
}

// has reports whether mount e (same ID, device and place) is still in
// the table.
func has(table []mountEntry, e mountEntry) bool {
	for _, x := range table {
		if x.id == e.id && x.major == e.major && x.minor == e.minor && x.dir == e.dir {
			return true
		}
	}
	return false
}
