package runtime

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"
)

// Only blocked cores are picked, with their waiting engines and without
// the counts; running and halted engines are left out.
func TestParseBlocked(t *testing.T) {
	file := `neuron0 core 0:
  PE waits at 0x1000 (CTRL_ES(0xa0)) for semaphore 3 >= 1 (now 0); records=1 not_emulated=0 waits=1
  ACT running at 0x2000; records=9 not_emulated=0 waits=0
neuron0 core 1: blocked: every running engine waits
  PE waits at 0x1040 (CTRL_ES(0xa0)) for semaphore 7 >= 1 (now 0); records=1 not_emulated=0 waits=2
  ACT halted at 0x3000; records=4 not_emulated=0 waits=0
  POOL waits at 0x5040 (CTRL_ES(0xa0)) for event 2 set (now 0); records=1 not_emulated=0 waits=2
neuron2 core 3: blocked: every running engine waits
  SP waits at 0x40 (NOP(0xa4)) for semaphore 1 == 5 (now 4); records=0 not_emulated=0 waits=1
`
	want := []BlockedCore{
		{Device: 0, Core: 1, Waiting: []string{
			"PE waits at 0x1040 (CTRL_ES(0xa0)) for semaphore 7 >= 1 (now 0)",
			"POOL waits at 0x5040 (CTRL_ES(0xa0)) for event 2 set (now 0)",
		}},
		{Device: 2, Core: 3, Waiting: []string{"SP waits at 0x40 (NOP(0xa4)) for semaphore 1 == 5 (now 4)"}},
	}
	if got := parseBlocked([]byte(file)); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if got := parseBlocked(nil); len(got) != 0 {
		t.Errorf("empty file: %+v", got)
	}
}

// A core's NOT EMULATED line and its last-record lines are picked with
// their device and core; a core without one is left out.
func TestParseNotEmulated(t *testing.T) {
	file := `neuron0 core 0:
  PE halted at 0x1000; records=3 not_emulated=0 waits=0
neuron1 core 1:
  PE halted at 0x1040; records=5 not_emulated=1 waits=0
  ACT halted at 0x2080; records=4 not_emulated=2 waits=1
  NOT EMULATED: 3 of 9 records were only counted; their results were not computed
    last on PE: MATMUL_SPARSE(0x07) at 0x1000: no source gives its effect
    last on ACT: ACTIVATE(0x21) at 0x2040: fp8 operands
neuron1 BAR0: 2 unmodelled words kept as plain registers, in 1 pages: 0x0(2)
`
	want := []NotEmulatedCore{{Device: 1, Core: 1, NotEmulated: 3, Records: 9, Last: []string{
		"on PE: MATMUL_SPARSE(0x07) at 0x1000: no source gives its effect",
		"on ACT: ACTIVATE(0x21) at 0x2040: fp8 operands",
	}}}
	if got := parseNotEmulated([]byte(file)); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

// Whatever the cores file holds, the parsers do not panic, and every core
// they pick has its header line in the file.
func FuzzParseCores(f *testing.F) {
	f.Add([]byte("neuron1 core 1:\n  NOT EMULATED: 3 of 9 records were only counted\n    last on PE: X\n"))
	f.Add([]byte("neuron0 core 1: blocked: every running engine waits\n  PE waits at 0x40 (NOP(0xa4)) for event 1 set (now 0); records=1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		has := func(dev, core int) bool {
			return bytes.Contains(b, fmt.Appendf(nil, "neuron%d core %d:", dev, core))
		}
		for _, c := range parseNotEmulated(b) {
			if !has(c.Device, c.Core) {
				t.Fatalf("picked %+v, whose header is not in the file", c)
			}
		}
		for _, c := range parseBlocked(b) {
			if !has(c.Device, c.Core) {
				t.Fatalf("picked %+v, whose header is not in the file", c)
			}
		}
	})
}
