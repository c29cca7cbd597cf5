package runtime_test

import (
	"context"
	"fmt"
	"time"

	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/runtime"
)

// The examples run against an emulated trn2.3xlarge (one Trainium2
// device). On a host with the driver, or inside 'neuronfs run', the host
// is runtime.System; exampleRoot stands in for it here.

func ExampleHost_Open() {
	h := runtime.Host{Root: exampleRoot}
	devices, err := h.DeviceIndices()
	if err != nil {
		fmt.Println(err)
		return
	}
	version, _ := h.DriverVersion()
	fmt.Printf("%d device(s), driver %s\n", len(devices), version)

	d, err := h.Open(devices[0]) // attaches this process to the device
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()
	info, _ := d.BasicInfo()
	minAPI, maxAPI, _ := d.CompatibleVersion()
	fmt.Printf("neuron%d: architecture v%d, runtime API %d-%d\n", d.Index, info.Architecture, minAPI, maxAPI)
	// Output:
	// 1 device(s), driver 2.25.4.0
	// neuron0: architecture v3, runtime API 10-11
}

func ExampleDevice_Alloc() {
	h := runtime.Host{Root: exampleRoot}
	d, err := h.Open(0)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close() // frees whatever the process still holds

	// 1 MiB of HBM, accounted to core 0 as tensors.
	m, err := d.Alloc(1<<20, runtime.AllocOptions{Core: 0, MemType: ioctl.MemTypeTensorsDevice})
	if err != nil {
		fmt.Println(err)
		return
	}
	m.Write(0, []byte("hello, HBM"))
	buf := make([]byte, 10)
	m.Read(0, buf)
	fmt.Printf("read back %q\n", buf)

	// The driver's sysfs counts the memory by core and category.
	const tensors = "neuron_core0/stats/memory_usage/device_mem/tensors/total"
	inUse, _ := h.SysfsCounter(0, tensors)
	fmt.Println("core 0 tensors in use:", inUse)
	m.Free()
	inUse, _ = h.SysfsCounter(0, tensors)
	fmt.Println("after free:", inUse)
	// Output:
	// read back "hello, HBM"
	// core 0 tensors in use: 1048576
	// after free: 0
}

func ExampleQueue_Submit() {
	d, err := runtime.Host{Root: exampleRoot}.Open(0)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()
	src, _ := d.Alloc(4096, runtime.AllocOptions{Host: true})
	dst, _ := d.Alloc(4096, runtime.AllocOptions{})
	src.Write(0, []byte("moved by a DMA engine"))

	// Queue 3 of DMA engine 2, with its rings in host memory; the last
	// copy of the batch is the completion marker the host polls.
	q, err := d.InitQueue(2, 3, 64, runtime.AllocOptions{Host: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	marker, _ := d.NewMarker()
	defer marker.Close()
	if err := q.Submit([]runtime.Copy{{Src: src.PA, Dst: dst.PA, Len: 21}, marker.Copy()}); err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := marker.Wait(ctx); err != nil {
		fmt.Println(err)
		return
	}
	buf := make([]byte, 21)
	dst.Read(0, buf)
	fmt.Printf("HBM holds %q\n", buf)
	// Output: HBM holds "moved by a DMA engine"
}

func ExampleNQ_Next() {
	d, err := runtime.Host{Root: exampleRoot}.Open(0)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()
	const core = 0
	// A reset gives the core fresh notification rings.
	if err := d.Reset(1 << core); err != nil {
		fmt.Println(err)
		return
	}
	// The INFER_STATUS ring of the first compute engine, in host memory,
	// enabled in the core's NOTIFIC block.
	q, err := d.InitNQ(core, runtime.NQTypeNotify, runtime.InferStatusSlot, 4096)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer q.Close()
	d.EnableNQs(core, 1<<runtime.InferStatusSlot)

	// Ring the exec doorbell: an increment of 1 of the inference-start
	// semaphore (any semaphore, by the emulator's default).
	d.Doorbell(core, 0, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range 2 {
		rec, err := q.Next(ctx)
		if err != nil {
			fmt.Println(err)
			return
		}
		switch runtime.RecordCode(rec) {
		case runtime.RecordStart:
			fmt.Println("START")
		case runtime.RecordEnd:
			fmt.Println("END")
		}
	}
	// Output:
	// START
	// END
}
