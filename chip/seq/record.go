package seq

import (
	"encoding/binary"
	"fmt"
)

// DebugCmd is byte 2 of a record: a profiling marker asking the engine to
// report the record.
type DebugCmd uint8

const (
	DebugNone     DebugCmd = 0
	DebugNotify   DebugCmd = 1
	DebugStart    DebugCmd = 3
	DebugEnd      DebugCmd = 5
	DebugStartEnd DebugCmd = 7
	DebugInsField DebugCmd = 9
)

// Record is one 64-byte instruction record.
type Record [RecordSize]byte

func (r *Record) Opcode() Opcode          { return Opcode(r[offOpcode]) }
func (r *Record) WordLen() uint8          { return r[offWordLen] }
func (r *Record) DebugCmd() DebugCmd      { return DebugCmd(r[offDebugCmd]) }
func (r *Record) DebugHint() uint8        { return r[offDebugHint] }
func (r *Record) u32(off int) uint32      { return binary.LittleEndian.Uint32(r[off:]) }
func (r *Record) u64(off int) uint64      { return binary.LittleEndian.Uint64(r[off:]) }
func (r *Record) put32(off int, v uint32) { binary.LittleEndian.PutUint32(r[off:], v) }
func (r *Record) put64(off int, v uint64) { binary.LittleEndian.PutUint64(r[off:], v) }

// Events is the standard tuple at +4.
func (r *Record) Events() Events { return r.events(offEvents, false) }

// ESEvents is CTRL_ES's extended tuple at +0x20.
func (r *Record) ESEvents() Events { return r.events(offESEvents, true) }

func (r *Record) events(off int, extended bool) Events {
	e := Events{
		WaitMode:   WaitMode(r[off]),
		WaitIdx:    r[off+1],
		UpdateMode: UpdateMode(r[off+2]),
		UpdateIdx:  r[off+3],
		WaitValue:  r.u32(off + 4),
	}
	e.UpdateValue = e.WaitValue
	if extended {
		e.UpdateValue = r.u32(off + 8)
	}
	return e
}

// SetEvents stores e as the standard tuple (its WaitValue is the one
// value the tuple holds).
func (r *Record) SetEvents(e Events) { r.setEvents(offEvents, e, false) }

// SetESEvents stores e as CTRL_ES's extended tuple.
func (r *Record) SetESEvents(e Events) { r.setEvents(offESEvents, e, true) }

func (r *Record) setEvents(off int, e Events, extended bool) {
	r[off], r[off+1], r[off+2], r[off+3] = byte(e.WaitMode), e.WaitIdx, byte(e.UpdateMode), e.UpdateIdx
	r.put32(off+4, e.WaitValue)
	if extended {
		r.put32(off+8, e.UpdateValue)
	}
}

// Decode checks b's first 64 bytes as one record under the validators'
// structural rules (a known, real opcode; inst_word_len 16; events modes
// this package can honour) and returns it. Branch targets need the image
// and are checked when the branch is taken.
func Decode(b []byte) (*Record, error) {
	if len(b) < RecordSize {
		return nil, fmt.Errorf("%w: %d bytes", ErrShort, len(b))
	}
	r := (*Record)(b[:RecordSize])
	return r, r.Validate()
}

// Validate applies Decode's checks to r.
func (r *Record) Validate() error {
	if r.valid() {
		return nil
	}
	return r.invalid()
}

// valid is Validate's answer for the common case, from tables alone.
func (r *Record) valid() bool {
	ok := opTable[r[offOpcode]].class >= ClassControl && r[offWordLen] == WordLen &&
		modeOK[r[offEvents]]&waitOK != 0 && modeOK[r[offEvents+2]]&updateOK != 0
	if Opcode(r[offOpcode]) == OpCtrlES {
		ok = ok && modeOK[r[offESEvents]]&waitOK != 0 && modeOK[r[offESEvents+2]]&updateOK != 0
	}
	return ok
}

// invalid says why r is not valid.
func (r *Record) invalid() error {
	switch r.Opcode().Class() {
	case ClassUnknown:
		return ErrUnknownOpcode
	case ClassPseudo:
		return ErrPseudoOpcode
	}
	if r.WordLen() != WordLen {
		return fmt.Errorf("%w: %d", ErrWordLen, r.WordLen())
	}
	if err := r.Events().validate(); err != nil {
		return err
	}
	if r.Opcode() == OpCtrlES {
		if err := r.ESEvents().validate(); err != nil {
			return err
		}
	}
	return fmt.Errorf("%w: % x", ErrUnknownOpcode, r[:offPayload]) // not reached: valid() checks no more than the above
}

// NewRecord returns a record of op with inst_word_len set.
func NewRecord(op Opcode) *Record {
	r := new(Record)
	r[offOpcode], r[offWordLen] = byte(op), WordLen
	return r
}
