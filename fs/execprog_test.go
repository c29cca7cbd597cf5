package fs_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/chip/seq"
	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/fs"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/runtime"
)

// progClient is an execClient that stages programs: an ERROR queue too,
// and the exec request delivered by the exec queue as the runtime does
// it (a 52-byte copy, then a 4-byte poke into the core's event window).
type progClient struct {
	*execClient
	sys  *device.System
	errQ *runtime.NQ
	dir  string // the mount
}

const progCore = 1

func newProgClient(t *testing.T) *progClient {
	t.Helper()
	return newProgClientConfig(t, device.Config{Instance: "trn2.48xlarge"})
}

// newProgClientConfig is newProgClient on a host built from cfg.
func newProgClientConfig(t *testing.T, cfg device.Config) *progClient {
	t.Helper()
	dir, sys := testutil.MountConfig(t, cfg)
	return newProgClientOn(t, dir, sys)
}

// newProgClientOn is newProgClient on a mounted host.
func newProgClientOn(t *testing.T, dir string, sys *device.System) *progClient {
	t.Helper()
	c := &progClient{execClient: newExecClient(t, dir, progCore, 4096), sys: sys, dir: dir}
	q, err := c.dev.InitNQ(progCore, runtime.NQTypeError, 2, 4096)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	c.errQ = q
	if err := c.dev.EnableNQs(progCore, 0x1f<<runtime.InferStatusSlot|1<<2); err != nil {
		t.Fatal(err)
	}
	return c
}

// image writes recs into a fresh allocation and returns its address.
func (c *progClient) image(recs ...*seq.Record) uint64 {
	c.t.Helper()
	m := mustMem(c.t, c.dev, 4096, runtime.AllocOptions{Core: progCore})
	img := seq.Assemble(m.PA, recs...)
	if err := m.Write(0, img.Data); err != nil {
		c.t.Fatal(err)
	}
	return m.PA
}

// deliver stages the request naming addrs (by engine) on the exec queue.
func (c *progClient) deliver(addrs [seq.NumEngines]uint64) {
	c.t.Helper()
	var req [0x38]byte
	for e, a := range addrs {
		binary.LittleEndian.PutUint32(req[0x04+4*e:], uint32(a))
		binary.LittleEndian.PutUint32(req[0x18+4*e:], uint32(a>>32))
	}
	binary.LittleEndian.PutUint32(req[0x34:], 1) // the poke's value (unknown; any)
	buf := mustMem(c.t, c.dev, 64, runtime.AllocOptions{Core: progCore})
	slot := mustMem(c.t, c.dev, 64, runtime.AllocOptions{Core: progCore})
	if err := buf.Write(0, req[:]); err != nil {
		c.t.Fatal(err)
	}
	evt, err := c.dev.SemaphoreAddress(progCore, 13, dhal.TPBEventsOffset)
	if err != nil {
		c.t.Fatal(err)
	}
	c.stage([]runtime.Copy{{Src: buf.PA, Dst: slot.PA, Len: 52}, {Src: buf.PA + 0x34, Dst: evt, Len: 4}})
}

// next reads one record of engine e's INFER_STATUS ring.
func (c *progClient) next(q *runtime.NQ) [runtime.RecordSize]byte {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rec, err := q.Next(ctx)
	if err != nil {
		c.t.Fatal(err)
	}
	return rec
}

// waitStates waits until every engine of the core's run is in st.
func (c *progClient) waitStates(n int, st seq.State) {
	c.t.Helper()
	c.waitStatesFor(n, st, 20*time.Second)
}

// waitStatesFor is waitStates for at most d.
func (c *progClient) waitStatesFor(n int, st seq.State, d time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for {
		ss := c.sys.Device(0).Chip().Core(progCore).EngineStatus()
		ok := len(ss) == n
		for _, s := range ss {
			ok = ok && s.State == st
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("engines never all %v: %v", st, ss)
		}
		time.Sleep(time.Millisecond)
	}
}

func tails(t *testing.T, qs []*runtime.NQ) []uint32 {
	t.Helper()
	var out []uint32
	for _, q := range qs {
		v, err := q.Tail()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// A delivered request runs the staged programs: every engine passes its
// gate, reports START, waits for a semaphore the host writes, reports
// END and halts. A program's own increment rings no doorbell, and a
// doorbell without a new request keeps the semantic answer.
func TestExecProgramRuns(t *testing.T) {
	c := newProgClient(t)
	var addrs [seq.NumEngines]uint64
	for e := range addrs {
		recs := []*seq.Record{seq.NewWait(seq.WaitSemGE, inferenceStart, 1), seq.NewNotify(0, runtime.RecordStart)}
		if e == int(seq.PE) {
			recs = append(recs, seq.NewSemUpdate(seq.UpdateSemInc, 9, 0))
		}
		recs = append(recs, seq.NewWait(seq.WaitSemGE, 7, 1), seq.NewNotify(0, runtime.RecordEnd), seq.NewRecord(seq.OpHalt))
		addrs[e] = c.image(recs...)
	}
	c.deliver(addrs)
	if err := c.dev.Doorbell(progCore, inferenceStart, 1); err != nil {
		t.Fatal(err)
	}
	c.expect(runtime.RecordStart)
	c.waitStates(seq.NumEngines, seq.Waiting)
	for e, tail := range tails(t, c.nqs) {
		if tail != 16 {
			t.Errorf("engine %d: tail %d before the semaphore came: END too early, or a doorbell from the program", e, tail)
		}
	}
	if err := c.dev.SemaphoreWrite(progCore, 7, 1); err != nil {
		t.Fatal(err)
	}
	c.expect(runtime.RecordEnd)
	c.waitStates(seq.NumEngines, seq.Halted)
	if v, err := c.dev.SemaphoreRead(progCore, 9); err != nil || v != 1 {
		t.Errorf("semaphore 9 after the program's increment: %d %v", v, err)
	}
	// Halted engines, no new request: the semantic START/END.
	if err := c.dev.Doorbell(progCore, inferenceStart, 1); err != nil {
		t.Fatal(err)
	}
	c.expect(runtime.RecordStart)
	c.expect(runtime.RecordEnd)
	if tail, err := c.errQ.Tail(); err != nil || tail != 0 {
		t.Errorf("ERROR queue tail %d %v after clean runs", tail, err)
	}
}

// Garbage stops its engine alone with an error record and no END; the
// other engines finish.
func TestExecProgramGarbage(t *testing.T) {
	c := newProgClient(t)
	good := c.image(seq.NewWait(seq.WaitSemGE, inferenceStart, 1), seq.NewNotify(0, runtime.RecordStart), seq.NewNotify(0, runtime.RecordEnd), seq.NewRecord(seq.OpHalt))
	garbage := seq.NewRecord(seq.OpNop)
	garbage[0] = 0xff
	bad := c.image(seq.NewWait(seq.WaitSemGE, inferenceStart, 1), seq.NewNotify(0, runtime.RecordStart), garbage, seq.NewNotify(0, runtime.RecordEnd), seq.NewRecord(seq.OpHalt))
	addrs := [seq.NumEngines]uint64{bad, good, good, good, good}
	c.deliver(addrs)
	if err := c.dev.Doorbell(progCore, inferenceStart, 1); err != nil {
		t.Fatal(err)
	}
	c.expect(runtime.RecordStart)
	for e, q := range c.nqs[1:] {
		if rec := c.next(q); runtime.RecordCode(rec) != runtime.RecordEnd {
			t.Errorf("engine %d: record %x, want END", e+1, rec)
		}
	}
	rec := c.next(c.errQ)
	if rec[3]&0x1f != 0x1f || rec[4] != seq.ErrorIDSequencerFatal || rec[5] != byte(seq.PE) {
		t.Errorf("error record %x, want TPB_ERROR, SEQUENCER_FATAL, engine PE", rec)
	}
	st := c.sys.Device(0).Chip().Core(progCore).EngineStatus()
	if len(st) != seq.NumEngines || st[0].State != seq.Faulted {
		t.Fatalf("engines after garbage: %v", st)
	}
	if tail, _ := c.nqs[0].Tail(); tail != 16 {
		t.Errorf("PE's ring tail %d: it reported more than START", tail)
	}
}

// An engine waiting for a semaphore that never comes is ended by
// NC_RESET.
func TestExecProgramResetEndsWait(t *testing.T) {
	c := newProgClient(t)
	img := c.image(seq.NewWait(seq.WaitSemGE, inferenceStart, 1), seq.NewWait(seq.WaitSemGE, 7, 1), seq.NewNotify(0, runtime.RecordEnd), seq.NewRecord(seq.OpHalt))
	c.deliver([seq.NumEngines]uint64{img, 0, img})
	if err := c.dev.Doorbell(progCore, inferenceStart, 1); err != nil {
		t.Fatal(err)
	}
	c.waitStates(2, seq.Waiting)
	for _, s := range c.sys.Device(0).Chip().Core(progCore).EngineStatus() {
		if s.Wait.Idx != 7 || !s.Wait.Semaphore {
			t.Errorf("%v: waits for the wrong thing", s)
		}
	}
	// The cores file says the core is stuck, and on what.
	b, err := os.ReadFile(filepath.Join(c.dir, fs.ControlDir, device.CoresFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{fmt.Sprintf("neuron0 core %d: blocked", progCore), "PE waits at", "POOL waits at", "for semaphore 7 >= 1 (now 0)"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %q:\n%s", device.CoresFile, want, b)
		}
	}
	if err := c.dev.Reset(1 << progCore); err != nil {
		t.Fatal(err)
	}
	c.waitStates(2, seq.Stopped)
}
