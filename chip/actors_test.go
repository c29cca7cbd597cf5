package chip

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/neuronfs/neuronfs/chip/exectrace"
	"github.com/neuronfs/neuronfs/chip/seq"
)

// A program that kicks an actor neuronfs does not emulate (a CTRL_WR into
// a Q7 core's RAM, as POOL's library load would) and then waits has its
// wait named: in its engine report, in the core's hang (the cores view
// and the slow-request log) and on the wait's span in the exec trace. An
// engine waiting after no such write is not named. On V2, V3 and V4.
func TestWaitOnActorNamed(t *testing.T) {
	for _, inst := range []string{"trn1.2xlarge", "trn2.3xlarge", "trn3.48xlarge"} {
		t.Run(inst, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "trace.json")
			w, err := exectrace.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			c, _ := newTestChipWith(t, inst, func(cfg *Config) { cfg.Trace = w.Device(0, "neuron0") })
			const nc, evt, sem = 1, 5, 7
			f := c.arch
			g := f.Q7Pool()
			q7 := f.CSRBase() + f.TPBBase(nc) + g.DRAMOffset(2)
			r := runEngines(t, c, nc, map[seq.Engine]*seq.Image{
				seq.POOL: seq.Assemble(0x1000, seq.NewCSRWrite(q7, 1), seq.NewWait(seq.WaitEvtSet, evt, 0), seq.NewRecord(seq.OpHalt)),
				seq.PE:   seq.Assemble(0x2000, seq.NewWait(seq.WaitSemGE, sem, 1), seq.NewRecord(seq.OpHalt)),
			})
			waitUntil(t, "both engines wait", func() bool {
				return r.seqs[seq.POOL].Status().State == seq.Waiting && r.seqs[seq.PE].Status().State == seq.Waiting
			})
			want := "Q7 core 2 of NeuronCore 1"
			for _, rep := range c.Core(nc).EngineReports() {
				switch rep.Status.Engine {
				case seq.POOL:
					if !strings.Contains(rep.Awaits, want) {
						t.Errorf("POOL's report names %q, want %q", rep.Awaits, want)
					}
				case seq.PE:
					if rep.Awaits != "" {
						t.Errorf("PE wrote nothing ignored but awaits %q", rep.Awaits)
					}
				}
			}
			h, ok := c.Core(nc).Blocked()
			if !ok || !strings.Contains(h.String(), "awaits "+want) {
				t.Errorf("hang %v (blocked %v) does not name %q", h, ok, want)
			}
			c.Core(nc).SetEvent(evt, true) // the Q7 answers, here from the test
			c.Core(nc).UpdateSemaphore(sem, seq.SemSet, 1)
			waitUntil(t, "both engines halt", func() bool {
				return r.seqs[seq.POOL].Status().State == seq.Halted && r.seqs[seq.PE].Status().State == seq.Halted
			})
			c.Stop()
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(b), `"awaits":"`+want); n != 1 {
				t.Errorf("the trace names the wait %d times, want once: %s", n, b)
			}
		})
	}
}
