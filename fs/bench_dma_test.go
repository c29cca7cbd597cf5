package fs_test

import (
	"context"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/chip/dma/dmadesc"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/runtime"
)

// BenchmarkDMABandwidth: 256 MiB device to device through 64 KiB
// descriptors against memmove of the same size in this process.
func BenchmarkDMABandwidth(b *testing.B) {
	const size = 256 << 20
	b.Run("impl=memmove/size=256MiB", func(b *testing.B) {
		src, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			b.Fatal(err)
		}
		defer unix.Munmap(src)
		dst, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			b.Fatal(err)
		}
		defer unix.Munmap(dst)
		for i := range src {
			src[i] = byte(i) // distinct pages, not the shared zero page
		}
		copy(dst, src) // fault dst in, as the DMA side is warmed up too
		b.SetBytes(size)
		for b.Loop() {
			copy(dst, src)
		}
	})
	b.Run("impl=neuronfs-dma/size=256MiB", func(b *testing.B) {
		dir, _ := testutil.Mount(b, "trn2.48xlarge")
		dev, err := runtime.Host{Root: dir}.Open(0)
		if err != nil {
			b.Fatal(err)
		}
		defer dev.Close()
		src, err := dev.Alloc(size, runtime.AllocOptions{Channel: 0})
		if err != nil {
			b.Fatal(err)
		}
		dst, err := dev.Alloc(size, runtime.AllocOptions{Channel: 1})
		if err != nil {
			b.Fatal(err)
		}
		marker, err := dev.NewMarker()
		if err != nil {
			b.Fatal(err)
		}
		defer marker.Close()
		q, err := dev.InitQueue(0, 0, 8192, runtime.AllocOptions{Host: true})
		if err != nil {
			b.Fatal(err)
		}
		copies := append(pieces(src.PA, dst.PA, size), marker.Copy())
		run := func() {
			if err := q.Submit(copies); err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := marker.Wait(ctx); err != nil {
				b.Fatal(err)
			}
		}
		if err := src.Fill(0, size, 0x5a); err != nil {
			b.Fatal(err)
		}
		run() // fault the destination pages in
		b.SetBytes(size)
		for b.Loop() {
			run()
		}
	})
}

// BenchmarkDoorbell: COPY_START of a 4 KiB copy until its completion
// marker is visible in the mapped word, interleaved with a bare go-fuse
// no-op ioctl (the floor).
func BenchmarkDoorbell(b *testing.B) {
	b.Run("op=doorbell-4KiB", func(b *testing.B) {
		noop := noopIoctl(b)
		dir, _ := testutil.Mount(b, "trn2.48xlarge")
		dev, err := runtime.Host{Root: dir}.Open(0)
		if err != nil {
			b.Fatal(err)
		}
		defer dev.Close()
		src, err := dev.Alloc(4096, runtime.AllocOptions{Host: true})
		if err != nil {
			b.Fatal(err)
		}
		dst, err := dev.Alloc(4096, runtime.AllocOptions{})
		if err != nil {
			b.Fatal(err)
		}
		marker, err := dev.NewMarker()
		if err != nil {
			b.Fatal(err)
		}
		defer marker.Close()
		// A ring pre-filled with (copy, marker) pairs; V3 ignores ring ids,
		// so the same descriptors serve every lap and only the doorbell
		// is on the measured path.
		const descs = 64
		q, err := dev.InitQueue(1, 0, descs, runtime.AllocOptions{Host: true})
		if err != nil {
			b.Fatal(err)
		}
		txv, err := q.TX.Map()
		if err != nil {
			b.Fatal(err)
		}
		defer unix.Munmap(txv)
		rxv, err := q.RX.Map()
		if err != nil {
			b.Fatal(err)
		}
		defer unix.Munmap(rxv)
		for i := 0; i < descs; i += 2 {
			c := []runtime.Copy{{Src: src.PA, Dst: dst.PA, Len: 4096}, marker.Copy()}
			for k, cp := range c {
				tx, rx := dmadesc.CopyPair(cp.Src, cp.Dst, cp.Len, dmadesc.InitialRingID)
				tx.Put(txv[(i+k)*dmadesc.Size:])
				rx.Put(rxv[(i+k)*dmadesc.Size:])
			}
		}
		ctx := context.Background()
		interleave(b.N, noop, clocked(func() {
			if err := q.Start(2); err != nil {
				b.Fatal(err)
			}
			if err := marker.Wait(ctx); err != nil {
				b.Fatal(err)
			}
		})).report(b)
	})
}
