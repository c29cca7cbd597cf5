package fs

import (
	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/internal/procfs"
)

// MappingAt implements device.MapLookup from /proc/<tgid>/maps: a line
// whose device and inode are one of this mount's device nodes, or one of
// the devices' physical-memory files (which direct descriptors are, see
// direct.go), maps that device's physical memory from the line's file
// offset.
func (f *FS) MappingAt(tgid int32, va uint64) (device.UserMapping, bool) {
	m, ok := procfs.MappingAt(int(tgid), va)
	if !ok {
		return device.UserMapping{}, false
	}
	dev, ok := f.deviceOf(m)
	if !ok {
		return device.UserMapping{}, false
	}
	return device.UserMapping{Device: dev, Start: m.Start, Length: m.End - m.Start, Offset: m.Offset}, true
}

// deviceOf reports which device's physical memory mapping m maps.
func (f *FS) deviceOf(m procfs.Mapping) (int, bool) {
	if dev, ok := f.physIno[fileID{unix.Mkdev(m.Major, m.Minor), m.Inode}]; ok {
		return dev, true
	}
	if uint64(m.Major)<<32|uint64(m.Minor) != f.mountDev.Load() {
		return 0, false
	}
	dev, ok := f.devIno[m.Inode]
	return dev, ok
}

// fileID names a file by device and inode number.
type fileID struct{ dev, ino uint64 }

// physFiles maps the devices' physical-memory files to device indexes.
func physFiles(sys *device.System) map[fileID]int {
	ids := map[fileID]int{}
	for _, d := range sys.Devices {
		var st unix.Stat_t
		if unix.Fstat(d.Chip().PhysFd(), &st) == nil {
			ids[fileID{st.Dev, st.Ino}] = d.Index
		}
	}
	return ids
}
