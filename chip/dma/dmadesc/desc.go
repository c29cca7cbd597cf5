package dmadesc

import "encoding/binary"

// Size is the size of one UDMA descriptor.
const Size = 16

// Bits of a descriptor's first word (len_ctrl).
const (
	LenMask         = 0xffff // 0 encodes MaxDescLen
	RingIDShift     = 24
	RingIDMask      = 3 << RingIDShift
	FlagFirst       = 1 << 26
	FlagLast        = 1 << 27
	FlagIntEnable   = 1 << 28
	FlagStrongOrder = 1 << 29 // RX, V3 and later
	FlagDMB         = 1 << 30 // TX: wait for earlier transfers
	FlagConcat      = 1 << 31
)

// Values of a TX descriptor's second word (meta_ctrl).
const (
	MetaDefault      = 0x01080003 // first and last block, copy source data, op 2
	MetaWriteBarrier = 1 << 26
)

// MaxDescLen is the most one descriptor moves.
const MaxDescLen = 1 << 16

// InitialRingID is the ring id a queue expects after it is reset; it
// advances by one (mod 4) each time the ring wraps.
const InitialRingID = 1

// Desc is one descriptor as it lies in a ring.
type Desc struct {
	LenCtrl uint32
	Meta    uint32 // TX: meta_ctrl; RX: low half of the second buffer pointer
	Addr    uint64 // TX: source address; RX: destination address
}

// Len returns the number of bytes the descriptor moves.
func (d Desc) Len() uint64 {
	if n := d.LenCtrl & LenMask; n != 0 {
		return uint64(n)
	}
	return MaxDescLen
}

// RingID returns the ring id (phase) the descriptor carries.
func (d Desc) RingID() uint8 { return uint8(d.LenCtrl & RingIDMask >> RingIDShift) }

// Last reports whether the descriptor ends its packet.
func (d Desc) Last() bool { return d.LenCtrl&FlagLast != 0 }

// Decode reads a descriptor from its 16-byte little-endian form.
func Decode(b []byte) Desc {
	_ = b[Size-1]
	return Desc{
		LenCtrl: binary.LittleEndian.Uint32(b[0:]),
		Meta:    binary.LittleEndian.Uint32(b[4:]),
		Addr:    binary.LittleEndian.Uint64(b[8:]),
	}
}

// Put writes d in its 16-byte form.
func (d Desc) Put(b []byte) {
	_ = b[Size-1]
	binary.LittleEndian.PutUint32(b[0:], d.LenCtrl)
	binary.LittleEndian.PutUint32(b[4:], d.Meta)
	binary.LittleEndian.PutUint64(b[8:], d.Addr)
}

// CopyPair builds the one-descriptor packet pair that copies n bytes
// (1..MaxDescLen) from src to dst, as the driver builds them: FIRST|LAST
// on both sides, the default meta word on TX.
func CopyPair(src, dst uint64, n uint32, ringID uint8) (tx, rx Desc) {
	ctrl := n&LenMask | uint32(ringID&3)<<RingIDShift | FlagFirst | FlagLast
	return Desc{LenCtrl: ctrl, Meta: MetaDefault, Addr: src}, Desc{LenCtrl: ctrl, Addr: dst}
}
