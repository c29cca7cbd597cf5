package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/runtime"
)

func init() {
	clients["bringup"] = bringupClient
}

// bringupPattern is what the bring-up client copies to the device.
var bringupPattern = func() []byte {
	b := make([]byte, 64)
	for i := range b {
		b[i] = byte(i*7 + 1)
	}
	return b
}()

// bringupCalls lists, in order, the calls bringupClient makes on the
// devices: an ioctl by macro name, the other ops by op name.
var bringupCalls = []string{
	"open",
	"NEURON_IOCTL_DEVICE_BASIC_INFO",
	"NEURON_IOCTL_COMPATIBLE_VERSION",
	"NEURON_IOCTL_DRIVER_INFO_GET",
	"NEURON_IOCTL_HOST_DEVICE_ID",
	"NEURON_IOCTL_MEM_ALLOC_V2MT64", "NEURON_IOCTL_MEM_GET_EXTENDED_INFO",
	"NEURON_IOCTL_MEM_ALLOC_V2MT64", "NEURON_IOCTL_MEM_GET_EXTENDED_INFO",
	"NEURON_IOCTL_MEM_BUF_COPY64",
	"NEURON_IOCTL_MEM_COPY64",
	"NEURON_IOCTL_MEM_BUF_COPY64",
	"NEURON_IOCTL_MEMSET64",
	"NEURON_IOCTL_NOTIFICATIONS_INIT_V2",
	"mmap", "munmap",
	"NEURON_IOCTL_MEM_FREE", "NEURON_IOCTL_MEM_FREE",
	// A core reset, a DMA ring run with its completion marker, and an
	// exec doorbell harvested from the PE's notification ring.
	"NEURON_IOCTL_NC_RESET", "NEURON_IOCTL_NC_RESET_READY",
	"NEURON_IOCTL_MEM_ALLOC_V2MT64", "NEURON_IOCTL_MEM_GET_EXTENDED_INFO",
	"NEURON_IOCTL_MEM_ALLOC_V2MT64", "NEURON_IOCTL_MEM_GET_EXTENDED_INFO",
	"NEURON_IOCTL_DMA_QUEUE_INIT",
	"NEURON_IOCTL_MEM_ALLOC_V2MT64", "NEURON_IOCTL_MEM_GET_EXTENDED_INFO",
	"NEURON_IOCTL_MEM_BUF_COPY64",
	"NEURON_IOCTL_MEM_ALLOC_V2MT64", "NEURON_IOCTL_MEM_GET_EXTENDED_INFO", "mmap",
	"NEURON_IOCTL_DMA_COPY_DESCRIPTORS64", "NEURON_IOCTL_DMA_COPY_DESCRIPTORS64", "NEURON_IOCTL_DMA_QUEUE_COPY_START",
	"NEURON_IOCTL_MEM_BUF_COPY64",
	"NEURON_IOCTL_NOTIFICATIONS_INIT_V2", "mmap",
	"NEURON_IOCTL_DEVICE_INFO", "NEURON_IOCTL_BAR_WRITE",
	"NEURON_IOCTL_SEMAPHORE_INCREMENT",
	"NEURON_IOCTL_BAR_WRITE", "NEURON_IOCTL_BAR_WRITE",
	"munmap", "munmap", "NEURON_IOCTL_MEM_FREE", "NEURON_IOCTL_MEM_FREE",
	"open",
	"NEURON_IOCTL_CRWL_NC_RANGE_MARK", "NEURON_IOCTL_CRWL_NC_RANGE_UNMARK",
	"close", "close",
}

// bringupClient brings device 0 up the way a runtime does (discovery,
// memory, copies, a notification ring, a core reservation) through the
// runtime package, and prints the values the driver gave it.
func bringupClient() int {
	if err := bringup(); err != nil {
		fmt.Fprintln(os.Stderr, "bringup:", err)
		return 1
	}
	return 0
}

func bringup() error {
	h := runtime.System
	d, err := h.Open(0)
	if err != nil {
		return err
	}
	if _, err := d.BasicInfo(); err != nil {
		return err
	}
	if _, _, err := d.CompatibleVersion(); err != nil {
		return err
	}
	if _, err := d.DriverInfo(); err != nil {
		return err
	}
	if _, err := d.HostDeviceID(); err != nil {
		return err
	}
	dev, err := d.Alloc(4096, runtime.AllocOptions{})
	if err != nil {
		return err
	}
	host, err := d.Alloc(8192, runtime.AllocOptions{Host: true})
	if err != nil {
		return err
	}
	if err := dev.Write(0, bringupPattern); err != nil {
		return err
	}
	if err := host.CopyFrom(128, dev, 0, 64); err != nil {
		return err
	}
	got := make([]byte, 64)
	if err := host.Read(128, got); err != nil {
		return err
	}
	if !bytes.Equal(got, bringupPattern) {
		return fmt.Errorf("read back %x", got)
	}
	if err := dev.Fill(0, 4096, 0xab); err != nil {
		return err
	}
	nq := ioctl.NotificationsInitV2{NQType: 1, Size: 4096, OnHostMemory: 1}
	if r, e := testutil.Ioctl(d.Fd(), ioctl.CmdNotificationsInitV2, &nq); r != 0 || e != 0 {
		return fmt.Errorf("NOTIFICATIONS_INIT_V2: %d %v", r, e)
	}
	ring, err := unix.Mmap(d.Fd(), int64(nq.MmapOffset), 4096, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return err
	}
	if err := unix.Munmap(ring); err != nil {
		return err
	}
	if err := dev.Free(); err != nil {
		return err
	}
	if err := host.Free(); err != nil {
		return err
	}
	if err := bringupDMAAndExec(d); err != nil {
		return err
	}
	misc, err := h.OpenMisc(0)
	if err != nil {
		return err
	}
	bitmap, err := misc.MarkCores(1, 0, 7)
	if err != nil {
		return err
	}
	if err := misc.UnmarkCores(bitmap); err != nil {
		return err
	}
	if err := misc.Close(); err != nil {
		return err
	}
	if err := d.Close(); err != nil {
		return err
	}
	fmt.Printf("handles %d %d nq %#x %d bitmap %#x\n", dev.Handle, host.Handle, nq.MmapOffset, nq.MemHandle, bitmap)
	return nil
}

// bringupDMAAndExec resets core 0, runs a DMA ring with the driver's
// completion marker, and rings the exec doorbell, harvesting the PE's
// START and END records.
func bringupDMAAndExec(d *runtime.Device) error {
	if err := d.Reset(1); err != nil {
		return err
	}
	q, err := d.InitQueue(0, 2, 32, runtime.AllocOptions{Host: true})
	if err != nil {
		return err
	}
	buf, err := d.Alloc(8192, runtime.AllocOptions{Host: true})
	if err != nil {
		return err
	}
	if err := buf.Write(0, bringupPattern); err != nil {
		return err
	}
	marker, err := d.NewMarker()
	if err != nil {
		return err
	}
	if err := q.Submit([]runtime.Copy{{Src: buf.PA, Dst: buf.PA + 4096, Len: 64}, marker.Copy()}); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := marker.Wait(ctx); err != nil {
		return err
	}
	got := make([]byte, 64)
	if err := buf.Read(4096, got); err != nil {
		return err
	}
	if !bytes.Equal(got, bringupPattern) {
		return fmt.Errorf("DMA copied %x", got)
	}
	nq, err := d.InitNQ(0, runtime.NQTypeNotify, runtime.InferStatusSlot, 4096)
	if err != nil {
		return err
	}
	if err := d.EnableNQs(0, 1<<runtime.InferStatusSlot); err != nil {
		return err
	}
	if err := d.Doorbell(0, 0, 1); err != nil {
		return err
	}
	for _, want := range []uint16{runtime.RecordStart, runtime.RecordEnd} {
		rec, err := nq.Next(ctx)
		if err != nil {
			return err
		}
		if runtime.RecordCode(rec) != want {
			return fmt.Errorf("PE record %x, want code %d", rec, want)
		}
	}
	if err := nq.Close(); err != nil {
		return err
	}
	if err := marker.Close(); err != nil {
		return err
	}
	return buf.Free()
}
