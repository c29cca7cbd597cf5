package fs_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/chip/seq"
	"github.com/neuronfs/neuronfs/device"
)

// A first execute whose POOL kicks a Q7 core (its library load, which
// neuronfs does not emulate) and waits for it does not leave the
// runtime's harvest with nothing but its timeout: after the hang budget
// the core's ERROR queue holds POOL's sequencer error record at its wait
// record, and the cores view says the run ended and what it awaited.
func TestHangOnActorEndsInErrorRecord(t *testing.T) {
	c := newProgClientConfig(t, device.Config{Instance: "trn2.48xlarge", HangEnd: 50 * time.Millisecond})
	f := c.sys.Arch
	q7 := f.CSRBase() + f.TPBBase(progCore) + f.Q7Pool().DRAMOffset(0)
	const evt = 5
	img := c.image(seq.NewWait(seq.WaitSemGE, inferenceStart, 1), seq.NewCSRWrite(q7, 1),
		seq.NewWait(seq.WaitEvtSet, evt, 0), seq.NewRecord(seq.OpHalt))
	var addrs [seq.NumEngines]uint64
	addrs[seq.POOL] = img
	c.deliver(addrs)
	if err := c.dev.Doorbell(progCore, inferenceStart, 1); err != nil {
		t.Fatal(err)
	}
	rec := c.next(c.errQ)
	line := uint64(rec[0]) | uint64(rec[1])<<8 | uint64(rec[2]&0x0f)<<16
	want := (img + 2*seq.RecordSize) / 64 & 0xfffff // the record's 20 bits of the wait's line
	if rec[3]&0x1f != 0x1f || rec[4] != seq.ErrorIDSequencerFatal || rec[5] != byte(seq.POOL) || line != want {
		t.Errorf("error record % x, want TPB_ERROR, SEQUENCER_FATAL, POOL at line %#x", rec, want)
	}
	c.waitStates(1, seq.Stopped)
	b, err := os.ReadFile(filepath.Join(c.dir, "neuronfs", device.CoresFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "run ended, nothing emulated answers its waits: POOL waits at") ||
		!strings.Contains(string(b), "awaits Q7 core 0 of NeuronCore 1") {
		t.Errorf("cores view does not say the run ended on the Q7 core:\n%s", b)
	}
}
