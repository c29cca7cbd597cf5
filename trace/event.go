package trace

import (
	"encoding/binary"
	"fmt"
)

// rawEvent is one ring buffer record of the eBPF side (see prog.go).
type rawEvent struct {
	ts        uint64
	tid, tgid int
	kind      uint32
	nr        uint64
	ret       int64
	args      [6]uint64
	data      []byte // the bytes read: ioctl argument, or file name
	nested    [2][]byte
}

func parseEvent(b []byte) (rawEvent, error) {
	if len(b) < shortEvent {
		return rawEvent{}, fmt.Errorf("trace: short event (%d bytes)", len(b))
	}
	le := binary.LittleEndian
	pt := le.Uint64(b[evPidTgid:])
	e := rawEvent{
		ts:   le.Uint64(b[evTime:]),
		tid:  int(uint32(pt)),
		tgid: int(pt >> 32),
		kind: le.Uint32(b[evKind:]),
		nr:   le.Uint64(b[evNr:]),
		ret:  int64(le.Uint64(b[evRet:])),
	}
	for i, off := range argRegs {
		e.args[i] = le.Uint64(b[off:])
	}
	n := min(int(le.Uint32(b[evDataLen:])), len(b)-evData)
	e.data = append([]byte(nil), b[evData:evData+n]...)
	if len(b) < eventSize {
		return e, nil
	}
	for i := range e.nested {
		if n := min(int(le.Uint32(b[evNestLen+4*i:])), nestCopy); n > 0 {
			e.nested[i] = append([]byte(nil), b[evNest+nestCopy*i:][:n]...)
		}
	}
	return e, nil
}
