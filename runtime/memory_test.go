package runtime_test

import (
	"bytes"
	"errors"
	"math/rand"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/runtime"
)

func pattern(n int, seed int64) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

// Every channel and the host: write, read back through the ioctl and
// through a mapping, write through the mapping, memset, copy, free, reuse.
func TestMemoryRoundTrip(t *testing.T) {
	for _, inst := range []string{"trn1.2xlarge", "trn2.48xlarge"} {
		t.Run(inst, func(t *testing.T) {
			dir, sys := testutil.Mount(t, inst)
			d, err := runtime.Host{Root: dir}.Open(0)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			targets := []runtime.AllocOptions{{Host: true}}
			for ch := 0; ch < sys.Arch.HBMChannels; ch++ {
				targets = append(targets, runtime.AllocOptions{Channel: uint32(ch), Core: 1, MemType: ioctl.MemTypeTensorsDevice})
			}
			for i, o := range targets {
				const size = 1<<20 + 123
				m, err := d.Alloc(size, o)
				if err != nil {
					t.Fatalf("alloc %+v: %v", o, err)
				}
				if m.Size != 1<<20+4096 || m.Host != o.Host {
					t.Errorf("alloc %+v: size %d host %v", o, m.Size, m.Host)
				}
				if !o.Host && (m.PA < sys.Arch.HBMBases[o.Channel] || m.PA >= sys.Arch.HBMBases[o.Channel]+sys.Arch.HBMSize) {
					t.Errorf("channel %d chunk at %#x", o.Channel, m.PA)
				}
				want := pattern(size, int64(i))
				if err := m.Write(0, want); err != nil {
					t.Fatal(err)
				}
				got := make([]byte, size)
				if err := m.Read(0, got); err != nil || !bytes.Equal(got, want) {
					t.Fatalf("read back (%v): mismatch", err)
				}
				mapped, err := m.Map()
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(mapped[:size], want) {
					t.Fatal("mapping does not show what was written")
				}
				copy(mapped[100:], "through the mapping")
				part := make([]byte, 19)
				m.Read(100, part)
				if string(part) != "through the mapping" {
					t.Fatalf("ioctl read after a mapped write: %q", part)
				}
				if err := m.Fill(4096, 8192, 0xab); err != nil {
					t.Fatal(err)
				}
				if mapped[4095] == 0xab || mapped[4096] != 0xab || mapped[4096+8191] != 0xab || mapped[4096+8192] == 0xab {
					t.Fatal("memset range wrong")
				}
				other, err := d.Alloc(8192, o)
				if err != nil {
					t.Fatal(err)
				}
				if err := other.CopyFrom(0, m, 100, 19); err != nil {
					t.Fatal(err)
				}
				other.Read(0, part)
				if string(part) != "through the mapping" {
					t.Fatalf("MEM_COPY64: %q", part)
				}
				unix.Munmap(mapped)
				pa := m.PA
				if err := m.Free(); err != nil {
					t.Fatal(err)
				}
				if err := m.Free(); !errors.Is(err, syscall.EINVAL) {
					t.Fatalf("double free: %v", err)
				}
				again, err := d.Alloc(size, o)
				if err != nil || again.PA != pa {
					t.Fatalf("reuse: %v at %#x, want %#x", err, again.PA, pa)
				}
				// Freed memory came back zeroed (returned to the host).
				again.Read(0, got[:4096])
				if !bytes.Equal(got[:4096], make([]byte, 4096)) {
					t.Fatal("reused memory not zero")
				}
				again.Free()
				other.Free()
			}
		})
	}
}

func TestMemoryExhaustion(t *testing.T) {
	dir, _ := testutil.Mount(t, "trn2.48xlarge")
	d, err := runtime.Host{Root: dir}.Open(2)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	const gib = 1 << 30
	if _, err := d.Alloc(24*gib, runtime.AllocOptions{Channel: 1}); !errors.Is(err, syscall.ENOMEM) {
		t.Fatalf("a whole channel (the carve-out is taken): %v, want ENOMEM", err)
	}
	big, err := d.Alloc(22*gib, runtime.AllocOptions{Channel: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Alloc(2*gib, runtime.AllocOptions{Channel: 1}); !errors.Is(err, syscall.ENOMEM) {
		t.Fatalf("past the channel: %v, want ENOMEM", err)
	}
	// Other channels are independent.
	if m, err := d.Alloc(2*gib, runtime.AllocOptions{Channel: 2}); err != nil {
		t.Fatal(err)
	} else {
		m.Free()
	}
	big.Free()
	if m, err := d.Alloc(2*gib, runtime.AllocOptions{Channel: 1}); err != nil {
		t.Fatalf("after freeing: %v", err)
	} else {
		m.Free()
	}
	if _, err := d.Alloc(4096, runtime.AllocOptions{Channel: 4}); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("channel 4: %v, want EINVAL", err)
	}
	if _, err := d.Alloc(4096, runtime.AllocOptions{Host: true, Channel: 4}); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("host memory with channel 4: %v, want EINVAL (the driver checks it for host too)", err)
	}
	if _, err := d.Alloc(4096, runtime.AllocOptions{Host: true, Align: 4096}); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("aligned host memory: %v, want EINVAL", err)
	}
}
