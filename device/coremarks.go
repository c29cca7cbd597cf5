package device

import "syscall"

// coreMarks is the host-wide core reservation table (reserve.go) under
// System.mu, and what the pod election hears of it: after every unmark,
// how many cores stay marked (at zero it forgets the operating mode, as
// the driver's npe hook does).
type coreMarks struct {
	s     *System
	table coreReservations // under s.mu
}

// mark reserves n free cores in [start, end] for tgid (coreReservations.mark).
func (m *coreMarks) mark(n, start, end uint32, tgid int32, bitmap *[8]uint64) (uint32, syscall.Errno) {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	return m.table.mark(n, start, end, tgid, bitmap)
}

// unmark frees the cores in bitmap that tgid holds.
func (m *coreMarks) unmark(bitmap *[8]uint64, tgid int32) {
	m.s.mu.Lock()
	m.table.unmark(bitmap, tgid)
	left := m.table.count
	m.s.mu.Unlock()
	if m.s.pod != nil {
		m.s.pod.NotifyUnmark(left)
	}
}

// unmarkAll frees every core tgid marked (flush of a free-access fd, or
// the process's exit).
func (m *coreMarks) unmarkAll(tgid int32) {
	all := [8]uint64{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}
	m.unmark(&all, tgid)
}

// owner returns the tgid that marked host-wide core index i (0: none).
func (m *coreMarks) owner(i uint32) int32 {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	if i >= maxHostCores {
		return 0
	}
	return m.table.owner[i]
}

// count returns how many cores are reserved host-wide.
func (m *coreMarks) count() int {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	return m.table.count
}

// MarkedCores returns how many cores are reserved host-wide.
func (s *System) MarkedCores() int { return s.cores.count() }
