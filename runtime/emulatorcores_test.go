package runtime

import (
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
