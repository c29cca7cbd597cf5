package fs_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/chip/dma/dmadesc"
	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/runtime"
)

// A ring all-reduce written against the Go runtime, as a collective
// library would drive the chips below its algorithm: every transfer is a
// descriptor of the sending device's queue that goes through the
// neighbour window to the next device of the ring, the reduce-scatter
// half sums in the engine (ADD over fp32 descriptors), and each step ends
// with a remote semaphore increment the host waits on.

// ringRank is one device of the ring.
type ringRank struct {
	dev     *runtime.Device
	index   int
	buf     *runtime.Mem // the data, reduced in place
	one     *runtime.Mem // the word 1, the semaphore increment's source
	q       *runtime.Queue
	next    *ringRank
	link    int // neighbour window to next
	nextSem uint64
}

const (
	ringSem    = 5 // the step counter semaphore (core 0)
	ringEngine = 1 // a core-0 engine
	ringQueue  = 4 // and its queue the ring uses
	ringDescs  = 1024
)

// hamiltonRing finds a cycle through all devices moving only between
// connected devices (depth first; the Trn2 torus has many).
func hamiltonRing(nb [][]uint32) []int {
	n := len(nb)
	path, used := []int{0}, make([]bool, n)
	used[0] = true
	var walk func() bool
	walk = func() bool {
		last := path[len(path)-1]
		if len(path) == n {
			for _, x := range nb[last] {
				if x == 0 {
					return true
				}
			}
			return false
		}
		for _, x := range nb[last] {
			if int(x) < n && !used[x] {
				used[x] = true
				path = append(path, int(x))
				if walk() {
					return true
				}
				path, used[x] = path[:len(path)-1], false
			}
		}
		return false
	}
	if !walk() {
		return nil
	}
	return path
}

// newRing opens every device of the mount, orders them in a ring and
// gives each size bytes of data, an increment word and a queue.
func newRing(tb testing.TB, dir string, size uint64) []*ringRank {
	tb.Helper()
	idx, err := runtime.Host{Root: dir}.DeviceIndices()
	if err != nil {
		tb.Fatal(err)
	}
	devs := make([]*runtime.Device, len(idx))
	nb := make([][]uint32, len(idx))
	for i := range idx {
		if devs[i], err = (runtime.Host{Root: dir}).Open(i); err != nil {
			tb.Fatal(err)
		}
		d := devs[i]
		tb.Cleanup(func() { d.Close() })
		if nb[i], err = d.ConnectedDevices(); err != nil {
			tb.Fatal(err)
		}
	}
	order := hamiltonRing(nb)
	if order == nil {
		tb.Fatalf("no ring through the neighbour graph %v", nb)
	}
	ranks := make([]*ringRank, len(order))
	for pos, i := range order {
		r := &ringRank{dev: devs[i], index: i}
		if r.buf, err = r.dev.Alloc(size, runtime.AllocOptions{}); err != nil {
			tb.Fatal(err)
		}
		if r.one, err = r.dev.Alloc(4096, runtime.AllocOptions{}); err != nil {
			tb.Fatal(err)
		}
		if err := r.one.Write(0, binary.LittleEndian.AppendUint32(nil, 1)); err != nil {
			tb.Fatal(err)
		}
		if r.q, err = r.dev.InitQueue(ringEngine, ringQueue, ringDescs, runtime.AllocOptions{Host: true}); err != nil {
			tb.Fatal(err)
		}
		if err := r.dev.SemaphoreWrite(0, ringSem, 0); err != nil {
			tb.Fatal(err)
		}
		ranks[pos] = r
	}
	for pos, r := range ranks {
		r.next = ranks[(pos+1)%len(ranks)]
		if r.link, err = r.dev.Link(r.next.index); err != nil {
			tb.Fatal(err)
		}
		sem, err := r.next.dev.SemaphoreAddress(0, ringSem, runtime.SemInc)
		if err != nil {
			tb.Fatal(err)
		}
		if r.nextSem, err = r.dev.PeerAddress(r.link, sem); err != nil {
			tb.Fatal(err)
		}
	}
	return ranks
}

// send queues chunk c of r's buffer into the same chunk of the next
// rank's (reduced into it when meta is a reduction), then +1 on the next
// rank's step semaphore.
func (r *ringRank) send(c int, chunk uint64, meta uint32) error {
	dst, err := r.dev.PeerAddress(r.link, r.next.buf.PA+uint64(c)*chunk)
	if err != nil {
		return err
	}
	src := r.buf.PA + uint64(c)*chunk
	var copies []runtime.Copy
	for off := uint64(0); off < chunk; off += dmadesc.MaxDescLen {
		n := min(chunk-off, dmadesc.MaxDescLen)
		copies = append(copies, runtime.Copy{Src: src + off, Dst: dst + off, Len: uint32(n & dmadesc.LenMask), Meta: meta})
	}
	copies = append(copies, runtime.Copy{Src: r.one.PA, Dst: r.nextSem, Len: 4})
	for len(copies) > 0 { // a submit holds at most half the ring
		n := min(len(copies), ringDescs/2)
		if err := r.q.Submit(copies[:n]); err != nil {
			return err
		}
		copies = copies[n:]
	}
	return nil
}

// ringAllReduce sums every rank's buffer into all of them: P-1
// reduce-scatter steps (rank at position i sends chunk i-s, summed into
// the next rank's copy by the engine), then P-1 all-gather steps (it
// sends the chunk it completed, i+1-s, as a plain copy). Each step waits
// for every rank's semaphore to count it.
func ringAllReduce(ctx context.Context, ranks []*ringRank, size uint64) error {
	p := len(ranks)
	chunk := size / uint64(p)
	add := dmadesc.ReduceMeta(dmadesc.CCEAdd, dmadesc.DtypeFP32)
	for s := range 2 * (p - 1) {
		for i, r := range ranks {
			c, meta := (i-s+2*p)%p, add
			if s >= p-1 { // all-gather
				c, meta = (i+1-(s-(p-1))+2*p)%p, 0
			}
			if err := r.send(c, chunk, meta); err != nil {
				return fmt.Errorf("step %d, device %d: %w", s, r.index, err)
			}
		}
		for _, r := range ranks {
			for {
				v, err := r.dev.SemaphoreRead(0, ringSem)
				if err != nil {
					return err
				}
				if v == uint32(s+1) {
					break
				}
				if ctx.Err() != nil {
					return fmt.Errorf("step %d: device %d's semaphore reads %d", s, r.index, v)
				}
				time.Sleep(20 * time.Microsecond)
			}
		}
	}
	return nil
}

// ringInput is device d's element k: small integers, so every sum is
// exact in fp32 whatever the order.
func ringInput(d, k int) float32 { return float32((d*131 + k*7) % 1009) }

func fillRing(tb testing.TB, ranks []*ringRank, size uint64) {
	tb.Helper()
	b := make([]byte, size)
	for _, r := range ranks {
		for k := range int(size / 4) {
			binary.LittleEndian.PutUint32(b[4*k:], math.Float32bits(ringInput(r.index, k)))
		}
		if err := r.buf.Write(0, b); err != nil {
			tb.Fatal(err)
		}
	}
}

func ringMount(tb testing.TB, instance string) string {
	start := uint32(0) // only semaphore 0 is a doorbell: the ring's counter is not
	return testutil.StartDaemon(tb, device.Config{Instance: instance, InferenceStart: &start}).Dir
}

// The all-reduce over the 16 devices of a trn2.48xlarge and of a
// trn3.48xlarge (V3 and V4) leaves on every device the element-wise sum
// of all inputs, as the host computes it.
func TestRingAllReduce(t *testing.T) {
	for _, inst := range []string{"trn2.48xlarge", "trn3.48xlarge"} {
		t.Run(inst, func(t *testing.T) { testRingAllReduce(t, inst) })
	}
}

func testRingAllReduce(t *testing.T, instance string) {
	const size = 16 * 64 << 10 // 1 MiB per device: 64 KiB chunks
	ranks := newRing(t, ringMount(t, instance), size)
	if len(ranks) != 16 {
		t.Fatalf("%d devices in the ring", len(ranks))
	}
	fillRing(t, ranks, size)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := ringAllReduce(ctx, ranks, size); err != nil {
		t.Fatal(err)
	}
	want := make([]float32, size/4)
	for k := range want {
		for _, r := range ranks {
			want[k] += ringInput(r.index, k)
		}
	}
	got := make([]byte, size)
	for _, r := range ranks {
		if err := r.buf.Read(0, got); err != nil {
			t.Fatal(err)
		}
		bad := 0
		for k, w := range want {
			if v := math.Float32frombits(binary.LittleEndian.Uint32(got[4*k:])); v != w {
				if bad++; bad <= 3 {
					t.Errorf("device %d element %d = %g, want %g", r.index, k, v, w)
				}
			}
		}
		if bad > 3 {
			t.Errorf("device %d: %d elements wrong", r.index, bad)
		}
	}
}

// The all-reduce of 64 MiB of fp32 per device over the 16 devices of a
// trn2.48xlarge, as TestRingAllReduce runs it; the inputs are written
// once (later iterations sum sums: the time does not depend on values).
func BenchmarkRingAllReduce(b *testing.B) {
	const size = 64 << 20
	ranks := newRing(b, ringMount(b, "trn2.48xlarge"), size)
	fillRing(b, ranks, size)
	ctx := context.Background()
	b.SetBytes(size)
	b.ResetTimer()
	for range b.N {
		for _, r := range ranks {
			if err := r.dev.SemaphoreWrite(0, ringSem, 0); err != nil {
				b.Fatal(err)
			}
		}
		if err := ringAllReduce(ctx, ranks, size); err != nil {
			b.Fatal(err)
		}
	}
}
