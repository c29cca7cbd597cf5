// Package memtest holds the flat physical memory the chip packages' tests
// give their engines, queues and firmware. It imports nothing of the
// project, so any package's own tests can use it.
package memtest

// Flat is one byte slice starting at physical address Base.
type Flat struct {
	Base uint64
	B    []byte
}

// New returns size bytes of zeroed memory at base.
func New(base uint64, size int) *Flat { return &Flat{Base: base, B: make([]byte, size)} }

// Slice returns [pa, pa+n), or false outside the memory.
func (m *Flat) Slice(pa, n uint64) ([]byte, bool) {
	if pa < m.Base || pa+n < pa || pa+n > m.Base+uint64(len(m.B)) {
		return nil, false
	}
	return m.B[pa-m.Base : pa-m.Base+n], true
}

// SliceWrite is Slice: flat memory holds every write.
func (m *Flat) SliceWrite(pa, n uint64) ([]byte, bool) { return m.Slice(pa, n) }

// Write copies src to pa.
func (m *Flat) Write(pa uint64, src []byte) bool {
	b, ok := m.Slice(pa, uint64(len(src)))
	if ok {
		copy(b, src)
	}
	return ok
}
