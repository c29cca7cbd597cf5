package seq

import "fmt"

// Image is a program held in a byte slice at device address Base; it is
// the Memory tests and fixtures use, and the fast path of a sequencer,
// which reads records in place: Data must not change while a program
// runs (device memory a client may write goes through a Memory that
// copies).
type Image struct {
	Base uint64
	Data []byte
}

// Fetch implements Memory.
func (m *Image) Fetch(addr uint64, r *Record) error {
	off := addr - m.Base
	if addr < m.Base || off > uint64(len(m.Data)) || uint64(len(m.Data))-off < RecordSize {
		return fmt.Errorf("%#x is outside the image [%#x, %#x)", addr, m.Base, m.Base+uint64(len(m.Data)))
	}
	copy(r[:], m.Data[off:])
	return nil
}

// End is the device address just past the image.
func (m *Image) End() uint64 { return m.Base + uint64(len(m.Data)) }

// Assemble lays records out one after another from base.
func Assemble(base uint64, recs ...*Record) *Image {
	data := make([]byte, 0, len(recs)*RecordSize)
	for _, r := range recs {
		data = append(data, r[:]...)
	}
	return &Image{Base: base, Data: data}
}
