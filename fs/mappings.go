package fs

import (
	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/internal/procfs"
)

// MappingAt implements device.MapLookup from /proc/<tgid>/maps: a line
// whose device and inode are one of this mount's device nodes maps that
// device's physical memory from the line's file offset.
func (f *FS) MappingAt(tgid int32, va uint64) (device.UserMapping, bool) {
	m, ok := procfs.MappingAt(int(tgid), va)
	if !ok || uint64(m.Major)<<32|uint64(m.Minor) != f.mountDev.Load() {
		return device.UserMapping{}, false
	}
	dev, ok := f.devIno[m.Inode]
	if !ok {
		return device.UserMapping{}, false
	}
	return device.UserMapping{Device: dev, Start: m.Start, Length: m.End - m.Start, Offset: m.Offset}, true
}
