// Package procfs reads what the daemon needs from /proc: single fields of
// "Key:\tvalue" files and the lines of a process's memory map.
package procfs

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// Field returns the trimmed value of the first line of file that starts
// with key followed by a colon.
func Field(file, key string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	prefix := []byte(key + ":")
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, prefix); ok {
			return string(bytes.TrimSpace(v)), nil
		}
	}
	return "", fmt.Errorf("no %s in %s", key, file)
}

// Mapping is one line of /proc/<pid>/maps.
type Mapping struct {
	Start, End   uint64
	Offset       uint64 // file offset of Start
	Major, Minor uint32 // the mapped file's device
	Inode        uint64
}

// MappingAt returns the mapping of process pid that holds addr.
func MappingAt(pid int, addr uint64) (Mapping, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return Mapping{}, false
	}
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		if m, ok := parseMapsLine(line); ok && addr >= m.Start && addr < m.End {
			return m, true
		}
	}
	return Mapping{}, false
}

// Mappings returns the file mappings of process pid, in address order.
func Mappings(pid int) ([]Mapping, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil, err
	}
	var ms []Mapping
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		if m, ok := parseMapsLine(line); ok && m.Inode != 0 {
			ms = append(ms, m)
		}
	}
	return ms, nil
}

// parseMapsLine reads "start-end perms offset major:minor inode [path]".
func parseMapsLine(line []byte) (Mapping, bool) {
	f := bytes.Fields(line)
	if len(f) < 5 {
		return Mapping{}, false
	}
	start, end, ok1 := bytes.Cut(f[0], []byte("-"))
	major, minor, ok2 := bytes.Cut(f[3], []byte(":"))
	if !ok1 || !ok2 {
		return Mapping{}, false
	}
	var m Mapping
	var err [6]error
	m.Start, err[0] = strconv.ParseUint(string(start), 16, 64)
	m.End, err[1] = strconv.ParseUint(string(end), 16, 64)
	m.Offset, err[2] = strconv.ParseUint(string(f[2]), 16, 64)
	maj, e3 := strconv.ParseUint(string(major), 16, 32)
	mnr, e4 := strconv.ParseUint(string(minor), 16, 32)
	m.Inode, err[5] = strconv.ParseUint(string(f[4]), 10, 64)
	err[3], err[4] = e3, e4
	for _, e := range err {
		if e != nil {
			return Mapping{}, false
		}
	}
	m.Major, m.Minor = uint32(maj), uint32(mnr)
	return m, m.End > m.Start
}
