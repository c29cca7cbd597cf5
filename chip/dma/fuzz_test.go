package dma

import (
	"context"
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/chip/dma/dmadesc"
	"github.com/neuronfs/neuronfs/internal/memtest"
)

// FuzzExecute runs arbitrary descriptor rings and doorbells. The engine
// must go idle, keep its pointers inside the rings, and write only where
// some RX descriptor of the rings points.
func FuzzExecute(f *testing.F) {
	seed := make([]byte, 2*32*dmadesc.Size)
	tx, rx := dmadesc.CopyPair(memBase+0x4000, memBase+0x5000, 0x100, dmadesc.InitialRingID)
	tx.Put(seed)
	rx.Put(seed[32*dmadesc.Size:])
	f.Add(seed, uint8(1), uint8(1), false)
	f.Add(seed, uint8(32), uint8(5), true)
	f.Fuzz(func(t *testing.T, rings []byte, txCount, rxCount uint8, masked bool) {
		const size = 32
		const txRing, rxRing = memBase, memBase + size*dmadesc.Size
		m := memtest.New(memBase, 0x10000)
		copy(m.B[:2*size*dmadesc.Size], rings)
		for i := 2 * size * dmadesc.Size; i < len(m.B); i++ {
			m.B[i] = byte(i)
		}
		before := append([]byte(nil), m.B...)
		e := NewEngine(0, m, Options{RingIDErrorsMasked: masked})
		if errno := e.InitQueue(0, RingSpec{txRing, size}, RingSpec{rxRing, size}); errno != 0 {
			t.Fatal(errno)
		}
		e.Doorbell(0, uint32(txCount)%(size+1), uint32(rxCount)%(size+1))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := e.WaitIdle(ctx, 0); err != nil {
			t.Fatal("engine never went idle")
		}
		for _, d := range []Dir{TX, RX} {
			if st := e.QueueState(0, d); st.Head >= size || st.Tail >= size {
				t.Fatalf("%v pointers outside the ring: %+v", d, st)
			}
		}
		// Every changed byte must lie in some RX descriptor's buffer.
		var targets [][2]uint64
		for i := range size {
			d := dmadesc.Decode(before[(size+i)*dmadesc.Size:])
			targets = append(targets, [2]uint64{d.Addr, d.Addr + d.Len()})
		}
		for i := range m.B {
			if m.B[i] == before[i] {
				continue
			}
			pa := uint64(memBase + i)
			ok := false
			for _, r := range targets {
				ok = ok || (pa >= r[0] && pa < r[1])
			}
			if !ok {
				t.Fatalf("byte at %#x changed outside every RX buffer", pa)
			}
		}
	})
}
