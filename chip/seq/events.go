package seq

import "fmt"

// WaitMode is the predicate a record waits for before it issues.
type WaitMode uint8

const (
	WaitNone            WaitMode = 0
	WaitSemEQ           WaitMode = 1
	WaitSemLT           WaitMode = 2
	WaitSemLE           WaitMode = 3
	WaitSemGT           WaitMode = 4
	WaitSemGE           WaitMode = 5
	WaitEvtSet          WaitMode = 6
	WaitEvtSetThenClear WaitMode = 7
	WaitEvtClear        WaitMode = 14
	WaitEvtClearThenSet WaitMode = 15
)

// UpdateMode is what a record does to a semaphore or event once it has
// run. Each READ form has a COMPLETE form 16 above it.
type UpdateMode uint8

const (
	UpdateNone      UpdateMode = 0
	UpdateEvtSet    UpdateMode = 1
	UpdateEvtClear  UpdateMode = 2
	UpdateSemInc    UpdateMode = 3
	UpdateSemDec    UpdateMode = 4
	UpdateSemAdd    UpdateMode = 5
	UpdateSemSub    UpdateMode = 7
	UpdateSemWrite  UpdateMode = 9
	UpdateCompleted UpdateMode = 16 // added to a READ form
)

// SemOp is an update of one semaphore, as Sync.UpdateSemaphore applies it.
type SemOp uint8

const (
	SemAdd SemOp = iota + 1 // add the value
	SemSub                  // subtract the value (wrapping, as a 32-bit word)
	SemSet                  // store the value
)

func (o SemOp) String() string {
	switch o {
	case SemAdd:
		return "+="
	case SemSub:
		return "-="
	case SemSet:
		return "="
	}
	return "?="
}

type waitInfo struct {
	name string
	sem  bool // reads a semaphore (else an event)
	ok   func(sem int32, v int32) bool
	evt  bool // the event state waited for
	then int  // event state stored once the wait passed: -1 none
}

// waits are the wait modes with a known meaning; the *_REG forms are in
// the enum but their values are not, so an engine meeting one stops.
var waits = [16]*waitInfo{
	WaitSemEQ:           {name: "==", sem: true, ok: func(s, v int32) bool { return s == v }},
	WaitSemLT:           {name: "<", sem: true, ok: func(s, v int32) bool { return s < v }},
	WaitSemLE:           {name: "<=", sem: true, ok: func(s, v int32) bool { return s <= v }},
	WaitSemGT:           {name: ">", sem: true, ok: func(s, v int32) bool { return s > v }},
	WaitSemGE:           {name: ">=", sem: true, ok: func(s, v int32) bool { return s >= v }},
	WaitEvtSet:          {name: "set", evt: true, then: -1},
	WaitEvtSetThenClear: {name: "set, then clear it", evt: true, then: 0},
	WaitEvtClear:        {name: "clear", evt: false, then: -1},
	WaitEvtClearThenSet: {name: "clear, then set it", evt: false, then: 1},
}

type updateInfo struct {
	sem bool
	op  SemOp // for a semaphore
	imm bool  // the operand is the record's value (else 1)
	evt bool  // for an event: the state stored
}

// updates are the READ forms with a known meaning.
var updates = [16]*updateInfo{
	UpdateEvtSet:   {evt: true},
	UpdateEvtClear: {evt: false},
	UpdateSemInc:   {sem: true, op: SemAdd},
	UpdateSemDec:   {sem: true, op: SemSub},
	UpdateSemAdd:   {sem: true, op: SemAdd, imm: true},
	UpdateSemSub:   {sem: true, op: SemSub, imm: true},
	UpdateSemWrite: {sem: true, op: SemSet, imm: true},
}

// modeOK says, per byte value, whether it is a wait mode and whether it
// is an update mode this package honours (none included).
var modeOK = func() (t [256]uint8) {
	for v := range t {
		if v == 0 || WaitMode(v).info() != nil {
			t[v] |= waitOK
		}
		if v == 0 || UpdateMode(v).info() != nil {
			t[v] |= updateOK
		}
	}
	return t
}()

const (
	waitOK   = 1
	updateOK = 2
)

func (m WaitMode) info() *waitInfo {
	if m == WaitNone || int(m) >= len(waits) {
		return nil
	}
	return waits[m]
}

func (m UpdateMode) info() *updateInfo {
	if m == UpdateNone {
		return nil
	}
	base := m
	if m >= UpdateCompleted && m < 2*UpdateCompleted {
		base = m - UpdateCompleted
	}
	if int(base) >= len(updates) {
		return nil
	}
	return updates[base]
}

// Events is a record's synchronisation: the wait before it issues and the
// update after it ran. The standard 8-byte tuple has one value for both;
// CTRL_ES's extended block has one each.
type Events struct {
	WaitMode    WaitMode
	WaitIdx     uint8
	UpdateMode  UpdateMode
	UpdateIdx   uint8
	WaitValue   uint32
	UpdateValue uint32
}

// validate reports a mode this package cannot honour.
func (e Events) validate() error {
	if e.WaitMode != WaitNone && e.WaitMode.info() == nil {
		return fmt.Errorf("%w: wait_mode %d", ErrEvents, e.WaitMode)
	}
	if e.UpdateMode != UpdateNone && e.UpdateMode.info() == nil {
		return fmt.Errorf("%w: update_mode %d", ErrEvents, e.UpdateMode)
	}
	return nil
}

// Wait describes what an engine waits for, for hang reports.
type Wait struct {
	Semaphore bool // a semaphore (else an event)
	Idx       uint8
	Mode      WaitMode
	Value     uint32 // the operand of a semaphore compare
	Now       uint32 // the semaphore's value, or the event's state, when last checked
}

func (w Wait) String() string {
	in := w.Mode.info()
	if in == nil {
		return "nothing"
	}
	if w.Semaphore {
		return fmt.Sprintf("semaphore %d %s %d (now %d)", w.Idx, in.name, int32(w.Value), int32(w.Now))
	}
	return fmt.Sprintf("event %d %s (now %d)", w.Idx, in.name, w.Now)
}
