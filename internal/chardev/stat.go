package chardev

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// handleEmptyPathStat answers newfstatat/statx with AT_EMPTY_PATH (the
// filter sends no other) and an empty or NULL path (Linux ≥ 6.11 takes
// NULL for "") as fstat of the descriptor.
func (s *Supervisor) handleEmptyPathStat(n *seccompNotif, sc *scratch, dirfd int32, pathPtr, buf uint64, isStatx bool, mask uint32) {
	if pathPtr != 0 {
		path, err := readPath(n.Pid, pathPtr, sc.buf[:])
		if err != nil || len(path) != 0 {
			s.pass(n.ID)
			return
		}
	}
	s.handleStat(n, dirfd, buf, isStatx, mask)
}

// handleStat answers a stat of a device fd with the character node's,
// with the device number the node stands for (a stand-in's is 0:0).
func (s *Supervisor) handleStat(n *seccompNotif, fd int32, buf uint64, isStatx bool, mask uint32) {
	minor, ok := s.ourFD(n.Pid, fd)
	if !ok {
		s.pass(n.ID)
		return
	}
	out, ok := s.nodeStat(minor, isStatx, mask)
	if !ok {
		s.pass(n.ID)
		return
	}
	s.writeAnswer(n, buf, out, 0)
}

// nodeStat is the stat (or statx) of device minor's node: of the node on
// disk, or with the filter host view (no node on disk) of /dev/null made
// the device's (viewNodeStat).
func (s *Supervisor) nodeStat(minor int, isStatx bool, mask uint32) ([]byte, bool) {
	node := s.nodes[minor]
	if s.paths != nil {
		node = nullDevice
	}
	if isStatx {
		var stx unix.Statx_t
		if err := unix.Statx(unix.AT_FDCWD, node, 0, int(mask), &stx); err != nil {
			return nil, false
		}
		stx.Rdev_major, stx.Rdev_minor = s.major, uint32(minor)
		if s.paths != nil {
			viewNodeStatx(&stx)
		}
		return unsafe.Slice((*byte)(unsafe.Pointer(&stx)), unsafe.Sizeof(stx)), true
	}
	var st unix.Stat_t
	if err := unix.Stat(node, &st); err != nil {
		return nil, false
	}
	st.Rdev = unix.Mkdev(s.major, uint32(minor))
	if s.paths != nil {
		viewNodeStat(&st)
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&st)), unsafe.Sizeof(st)), true
}

// writeAnswer writes out into the caller's memory at buf and answers the
// call with val, or EFAULT. The answer is written through a pin of the
// caller, checked after it: a caller killed meanwhile has its id reused
// at once.
func (s *Supervisor) writeAnswer(n *seccompNotif, buf uint64, out []byte, val int64) {
	pin, err := s.pins.get(n.Pid)
	if err != nil {
		s.pass(n.ID)
		return
	}
	defer func() { s.pins.put(pin) }()
	if !s.valid(n.ID) {
		s.pass(n.ID)
		return
	}
	k, err := unix.Pwrite(pin.mem, out, int64(buf))
	if k == 0 && err == nil && len(out) > 0 {
		// The pin's address space is gone while the call is live: the
		// caller exec'd since it was cached.
		fresh, rerr := s.pins.repin(n.Pid, pin)
		if rerr == nil {
			s.pins.put(pin)
			pin = fresh
			if s.valid(n.ID) {
				k, err = unix.Pwrite(pin.mem, out, int64(buf))
			}
		}
	}
	if err != nil || k < len(out) {
		s.respond(n.ID, 0, unix.EFAULT, 0)
		return
	}
	s.respond(n.ID, val, 0, 0)
}
