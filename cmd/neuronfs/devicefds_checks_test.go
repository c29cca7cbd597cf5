package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/signal"
	goruntime "runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/chip/dma/dmadesc"
	"github.com/neuronfs/neuronfs/runtime"
)

// The directfds client's checks beyond a device chunk: what a runtime
// does with a device descriptor, whatever the descriptor is.

// checkCoherent maps m and checks the mapping and the daemon's memory
// see each other's writes at once.
func checkCoherent(m *runtime.Mem, what string) error {
	view, err := m.Map()
	if err != nil {
		return fmt.Errorf("mmap of a %s: %w", what, err)
	}
	defer unix.Munmap(view)
	// Client to daemon: the daemon copies out what the mapping holds.
	copy(view, "written through the mapping")
	got := make([]byte, 27)
	if err := m.Read(0, got); err != nil || string(got) != "written through the mapping" {
		return fmt.Errorf("%s: the daemon reads %q (%v) where the mapping wrote", what, got, err)
	}
	// Daemon to client: the mapping shows what the daemon copied in.
	if err := m.Write(8192, []byte("written by the daemon")); err != nil {
		return err
	}
	if !bytes.Equal(view[8192:8192+21], []byte("written by the daemon")) {
		return fmt.Errorf("%s: the mapping shows %q where the daemon wrote", what, view[8192:8192+21])
	}
	return nil
}

// checkDMARing runs a copy on a DMA queue whose rings are in host memory
// and checks the mapped TX ring holds the descriptors the driver wrote
// into it, and the copy landed when its completion marker did.
func checkDMARing(d *runtime.Device) error {
	q, err := d.InitQueue(2, 3, 32, runtime.AllocOptions{Host: true})
	if err != nil {
		return err
	}
	ring, err := q.TX.Map()
	if err != nil {
		return fmt.Errorf("mmap of a DMA ring: %w", err)
	}
	defer unix.Munmap(ring)
	buf, err := d.Alloc(8192, runtime.AllocOptions{Host: true})
	if err != nil {
		return err
	}
	defer buf.Free()
	pattern := []byte("copied by the DMA engine")
	if err := buf.Write(0, pattern); err != nil {
		return err
	}
	marker, err := d.NewMarker()
	if err != nil {
		return err
	}
	defer marker.Close()
	copies := []runtime.Copy{{Src: buf.PA, Dst: buf.PA + 4096, Len: uint32(len(pattern))}, marker.Copy()}
	tx, _ := q.Descriptors(copies)
	want := make([]byte, len(tx)*dmadesc.Size)
	for i, desc := range tx {
		desc.Put(want[i*dmadesc.Size:])
	}
	if err := q.Submit(copies); err != nil {
		return err
	}
	if !bytes.Equal(ring[:len(want)], want) {
		return fmt.Errorf("the mapped TX ring holds %x, the driver was given %x", ring[:len(want)], want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := marker.Wait(ctx); err != nil {
		return err
	}
	got := make([]byte, len(pattern))
	if err := buf.Read(4096, got); err != nil || !bytes.Equal(got, pattern) {
		return fmt.Errorf("DMA copied %q (%v)", got, err)
	}
	return nil
}

// checkSignals repeats the long commands (buffer copies both ways,
// MEM_COPY64, MEMSET64, NC_RESET and its wait) on a thread another one
// keeps sending SIGALRM (100 us sleeps between: about a thousand a
// second), as a runtime's interval timer would. Go's
// handlers are SA_RESTART, as such a runtime's: the driver never looks
// at signals there, so no call may fail with EINTR, and each copy has
// landed when its call returns. It reports the signals sent.
func checkSignals(d *runtime.Device, dur time.Duration) (int64, error) {
	const size = 4 << 20
	src, err := d.Alloc(size, runtime.AllocOptions{})
	if err != nil {
		return 0, err
	}
	defer src.Free()
	dst, err := d.Alloc(size, runtime.AllocOptions{Host: true})
	if err != nil {
		return 0, err
	}
	defer dst.Free()
	alarms := make(chan os.Signal, 64)
	signal.Notify(alarms, unix.SIGALRM)
	defer signal.Stop(alarms)

	tids := make(chan int)
	done := make(chan error)
	go func() {
		// The thread ends with the goroutine: it has had signals.
		goruntime.LockOSThread()
		tids <- unix.Gettid()
		done <- signalLoop(d, src, dst, size, dur)
	}()
	tid := <-tids
	var sent atomic.Int64
	stop := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			case <-alarms:
			default:
			}
			if unix.Tgkill(os.Getpid(), tid, unix.SIGALRM) == nil {
				sent.Add(1)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}()
	err = <-done
	close(stop)
	<-stopped
	return sent.Load(), err
}

func signalLoop(d *runtime.Device, src, dst *runtime.Mem, size int, dur time.Duration) error {
	data := make([]byte, size)
	back := make([]byte, size)
	deadline := time.Now().Add(dur)
	for i := 0; i < 3 || time.Now().Before(deadline); i++ {
		for j := range data {
			data[j] = byte(i + j*7)
		}
		if err := src.Write(0, data); err != nil {
			return fmt.Errorf("round %d: %w", i, err)
		}
		if err := src.Read(0, back); err != nil || !bytes.Equal(back, data) {
			return fmt.Errorf("round %d: read back after a buffer copy: %v", i, err)
		}
		if err := dst.CopyFrom(0, src, 0, uint64(size)); err != nil {
			return fmt.Errorf("round %d: %w", i, err)
		}
		if err := dst.Read(0, back); err != nil || !bytes.Equal(back, data) {
			return fmt.Errorf("round %d: MEM_COPY64 had not landed: %v", i, err)
		}
		if err := src.Fill(0, uint64(size), byte(i)); err != nil {
			return fmt.Errorf("round %d: %w", i, err)
		}
		if err := src.Read(uint64(size-4096), back[:4096]); err != nil || !bytes.Equal(back[:4096], bytes.Repeat([]byte{byte(i)}, 4096)) {
			return fmt.Errorf("round %d: MEMSET64 had not landed: %v", i, err)
		}
		if err := d.Reset(1); err != nil {
			return fmt.Errorf("round %d: %w", i, err)
		}
	}
	return nil
}
