package fs

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"

	"github.com/neuronfs/neuronfs/device"
)

// MappingAt implements device.MapLookup from /proc/<tgid>/maps: a line
// whose device and inode are one of this mount's device nodes maps that
// device's physical memory from the line's file offset.
func (f *FS) MappingAt(tgid int32, va uint64) (device.UserMapping, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", tgid))
	if err != nil {
		return device.UserMapping{}, false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		m, ok := f.parseMapsLine(sc.Bytes())
		if ok && va >= m.Start && va-m.Start < m.Length {
			return m, true
		}
	}
	return device.UserMapping{}, false
}

// parseMapsLine reads "start-end perms offset major:minor inode path" and
// reports whether it maps one of the device nodes.
func (f *FS) parseMapsLine(line []byte) (device.UserMapping, bool) {
	fields := bytes.Fields(line)
	if len(fields) < 5 {
		return device.UserMapping{}, false
	}
	start, end, ok := bytes.Cut(fields[0], []byte("-"))
	major, minor, ok2 := bytes.Cut(fields[3], []byte(":"))
	if !ok || !ok2 {
		return device.UserMapping{}, false
	}
	maj, err1 := strconv.ParseUint(string(major), 16, 32)
	mnr, err2 := strconv.ParseUint(string(minor), 16, 32)
	ino, err3 := strconv.ParseUint(string(fields[4]), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || maj<<32|mnr != f.mountDev.Load() {
		return device.UserMapping{}, false
	}
	dev, ok := f.devIno[ino]
	if !ok {
		return device.UserMapping{}, false
	}
	s, err1 := strconv.ParseUint(string(start), 16, 64)
	e, err2 := strconv.ParseUint(string(end), 16, 64)
	off, err3 := strconv.ParseUint(string(fields[2]), 16, 64)
	if err1 != nil || err2 != nil || err3 != nil || e <= s {
		return device.UserMapping{}, false
	}
	return device.UserMapping{Device: dev, Start: s, Length: e - s, Offset: off}, true
}
