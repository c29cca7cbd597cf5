package fs_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/chip/seq"
	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/fs"
)

// The V2 bring-up's timestamp calibration (libnrt's tdrv_tsync_timestamps)
// replayed at the register level through BAR_WRITE and BAR_READ, with
// the start registers docs/isa.md guesses: a program per TPB engine,
// started through its START_ADDR and START_CTRL, waits for the TOP_SP;
// the TOP_SP's program, started by its tsync doorbell, releases them;
// each engine writes its timestamp notification (picosecond clock of the
// core's NOTIFIC block, between the clock read before the doorbell and
// after, in no order among the engines) and halts; every START_CTRL reads stopped inside libnrt's
// 1000 ms budget.
func TestTsyncV2Replay(t *testing.T) {
	c := newProgClientConfig(t, device.Config{Instance: "trn1.2xlarge"})
	f := c.sys.Arch
	bar := newBarClient(t, openDev(t, c.dir, 0, unix.O_RDWR))
	const (
		release = 20     // the semaphore the TOP_SP increments
		hint    = 0x0150 // debug_hint_extended of engine e's record: hint+e
		topSP   = 3      // core 1's first TOP_SP (three per core on V2)
	)
	const (
		startCtrl   = 0x004
		startAddrLo = 0x1060
		startAddrHi = 0x1080
		topSPLocal  = 0x60000
		tsyncSignal = 0x1560
	)
	windows := map[seq.Engine]uint64{seq.PE: 0x2600000, seq.ACT: 0x2400000, seq.POOL: 0x2900000, seq.DVE: 0x2B00000, seq.SP: 0x2800000}
	var locals []uint64
	start := func(local, addr uint64) {
		bar.write(local+startAddrLo, uint32(addr), 0)
		bar.write(local+startAddrHi, uint32(addr>>32), 0)
	}
	for e := range seq.Engine(seq.NumEngines) {
		local := f.TPBBase(progCore) + windows[e]
		locals = append(locals, local)
		start(local, c.image(seq.NewWait(seq.WaitSemGE, release, 1), seq.NewNotify(0, hint+uint16(e)), seq.NewRecord(seq.OpHalt)))
		bar.write(local+startCtrl, 1, 0)
		if v := bar.read(local + startCtrl); v[0]&1 == 0 {
			t.Fatalf("%v: START_CTRL %#x while its program waits for the TOP_SP", e, v[0])
		}
	}
	top := f.TopSPWindow(topSP) + topSPLocal
	locals = append(locals, top)
	topProg := c.image(seq.NewSemUpdate(seq.UpdateSemInc, release, 0), seq.NewRecord(seq.OpHalt))
	start(top, topProg)

	nqb := f.NotificationBlock(progCore)
	clock := func() uint64 {
		v := bar.read(nqb+dhal.NotificTimestampLo, nqb+dhal.NotificTimestampHi)
		return uint64(v[1])<<32 | uint64(v[0])
	}
	before := clock()
	rang := time.Now()
	bar.write(top+tsyncSignal, 1, 0)

	// The TOP_SP releases every engine at once and they run side by side,
	// as on the chip: each stamp lies between the clock reads, in no
	// order among the engines.
	var last uint64
	for e, q := range c.nqs {
		rec := c.next(q)
		ext := binary.LittleEndian.Uint16(rec[6:])
		stamp := binary.LittleEndian.Uint64(rec[8:])
		if rec[3]&0x3f != dhal.EngineNotifyType[e] || ext != hint+uint16(e) {
			t.Errorf("%v: record %x, want type %#x, debug_hint_extended %#x", seq.Engine(e), rec, dhal.EngineNotifyType[e], hint+e)
		}
		if stamp < before {
			t.Errorf("%v: timestamp %d ps before the clock read before the doorbell (%d)", seq.Engine(e), stamp, before)
		}
		last = max(last, stamp)
	}
	if after := clock(); last > after {
		t.Errorf("latest timestamp %d ps after the clock read afterwards (%d)", last, after)
	}
	for i, local := range locals {
		for bar.read(local + startCtrl)[0]&1 != 0 {
			if time.Since(rang) > time.Second { // libnrt: "Timestamp program stop timeout"
				t.Fatalf("program %d (window %#x) not stopped within 1000 ms of the doorbell", i, local)
			}
			time.Sleep(time.Millisecond)
		}
	}
	for _, s := range c.sys.Device(0).Chip().Core(progCore).EngineStatus() {
		if s.State != seq.Halted {
			t.Errorf("after tsync: %v", s)
		}
	}
	b, err := os.ReadFile(filepath.Join(c.dir, fs.ControlDir, device.CoresFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"PE halted", "(started by START_CTRL)", fmt.Sprintf("SP halted at %#x (started by TOP_SP %d)", topProg+seq.RecordSize, topSP)} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %q:\n%s", device.CoresFile, want, b)
		}
	}
	if tail, err := c.errQ.Tail(); err != nil || tail != 0 {
		t.Errorf("ERROR queue tail %d %v after tsync", tail, err)
	}
}
