package fs_test

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/chip/seq"
	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/runtime"
)

// BenchmarkExecProgram: SEMAPHORE_INCREMENT until SP's END is visible in
// the mapped ring, with nothing staged (the semantic answer) and with a
// staged SP program made of the wait gate, START, END (which takes the
// doorbell back) and the branch to the gate, delivered once through the
// exec queue, interleaved with a bare go-fuse no-op ioctl (the floor).
func BenchmarkExecProgram(b *testing.B) {
	for _, program := range []bool{false, true} {
		name := "op=doorbell-END-semantic"
		if program {
			name = "op=doorbell-END-program"
		}
		b.Run(name, func(b *testing.B) {
			noop, dev, sp := execBenchHost(b)
			if program {
				deliverSPProgram(b, dev)
			}
			ring := func() time.Duration { return ringUntilEnd(b, dev, sp) }
			ring() // the program's first doorbell also starts it
			interleave(b.N, noop, ring).report(b)
		})
	}
}

// deliverSPProgram stages the gate loop for SP on core 0 and its request
// on the exec queue; the next doorbell starts it.
func deliverSPProgram(b *testing.B, dev *runtime.Device) {
	b.Helper()
	end := seq.NewNotify(0, runtime.RecordEnd)
	end.SetEvents(seq.Events{UpdateMode: seq.UpdateSemDec, UpdateIdx: 0})
	img, err := dev.Alloc(4096, runtime.AllocOptions{})
	if err != nil {
		b.Fatal(err)
	}
	code := seq.Assemble(img.PA, seq.NewWait(seq.WaitSemGE, 0, 1), seq.NewNotify(0, runtime.RecordStart), end, seq.NewBranch(seq.BranchAlways, 0, 0, -3*seq.RecordSize))
	if err := img.Write(0, code.Data); err != nil {
		b.Fatal(err)
	}
	var req [0x38]byte
	binary.LittleEndian.PutUint32(req[0x04+4*int(seq.SP):], uint32(img.PA))
	binary.LittleEndian.PutUint32(req[0x18+4*int(seq.SP):], uint32(img.PA>>32))
	buf, err := dev.Alloc(64, runtime.AllocOptions{})
	if err != nil {
		b.Fatal(err)
	}
	slot, err := dev.Alloc(64, runtime.AllocOptions{})
	if err != nil {
		b.Fatal(err)
	}
	if err := buf.Write(0, req[:]); err != nil {
		b.Fatal(err)
	}
	evt, err := dev.SemaphoreAddress(0, 13, dhal.TPBEventsOffset)
	if err != nil {
		b.Fatal(err)
	}
	q, err := dev.InitQueue(3, 6, 64, runtime.AllocOptions{})
	if err != nil {
		b.Fatal(err)
	}
	copies := []runtime.Copy{{Src: buf.PA, Dst: slot.PA, Len: 52}, {Src: buf.PA + 0x34, Dst: evt, Len: 4}}
	if err := q.WriteDescriptors(q.Descriptors(copies)); err != nil {
		b.Fatal(err)
	}
}
