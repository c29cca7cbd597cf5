// Package chip is the silicon of one emulated Neuron device: what package
// device, the driver, reads and writes through registers, memory and
// semaphores, and what runs on it.
//
// # What lives here
//
// A Chip owns what spans its cores: the physical memory (a memfd or
// backing file) and the HBM scrub pattern, the DMA address space with its
// routes to neighbours and host memory and the engines, BAR0 with the
// firmware behind misc RAM, the TOP_SPs' NOTIFIC blocks, the sweeper of
// mapped semaphore windows, the watch that recognises exec requests in
// the DMA queues' copies, the firmware's power model and the PCI
// function's config space. chip.New builds all of it; the driver builds
// none.
//
// A Core (Chip.Core) is one NeuronCore: its semaphore and event area, its
// exec doorbell, its NOTIFIC block, the exec request delivered to it, its
// staged runs and parked engines, its SBUF and PSUM, its sweep target and
// the range of its DMA engines. It is its sequencers' seq.Sync and
// seq.CSR, and reaches the chip only through coreChip (corelink.go):
// memory, engines, the driver's queues, allocations and counters, the
// tracer and the power model.
//
// The pieces the chip assembles are packages of their own under chip/:
// dma (the UDMA engines and their descriptor rings; dma/dmadesc the wire
// format shared with the runtime and replay), nq (NOTIFIC blocks), mmio
// (BAR0 as a register file, the firmware behind the FW-IO mailbox, and
// the driver's side of that mailbox, which stays beside the firmware as
// one protocol), seq (the engines' sequencers), spacefs (the compact
// store behind a physical address space) and exectrace (the engines'
// Chrome/Perfetto trace).
//
// Files, one job each: chip.go (the Chip), physmem.go and physseal.go (the
// physical-memory file and its fixed size), clientopen.go (a client's own
// open of it, for direct descriptors), hbmpattern.go, space.go (address
// space and engines), route.go (the decoder's neighbours, aliases and
// semaphore windows), bar0.go, tpbmem.go (the TPB windows of BAR0 as
// memory), notific.go, sem.go and semcas.go (an Area's words), semsweep.go
// and sweepsleep.go (polling mapped stores), power.go (the firmware's
// utilisation model), pciconfig.go and pcicaps.go (the PCI function's
// config space), driver.go (Driver, the chip's view of the driver). The
// core's: core.go (its state), corelink.go (its view of the chip),
// hostsem.go (the host's stores), doorbell.go and doorbellqueue.go (a
// doorbell and its queue), request.go (delivered exec requests), run.go
// (staged runs), regrun.go (runs started by register), engineregs.go
// (the engines' and TOP_SPs' start registers in BAR0), sched.go (who runs
// the engines), enginepool.go (the chip's goroutines engines take turns
// on), sync.go (the engines' Sync and CSR), onchip.go (SBUF and
// PSUM), status.go (engine reports and hangs).
//
// # How a request travels
//
// Neither Chip nor Core knows anything of processes, handles or ioctls.
// Package device builds one Chip per device, calls a core's methods for
// its semaphores, events, resets and status, and never lets the chip
// import it; it never computes a chip offset (a semaphore command names
// the window and index, the core knows where they lie). The chip reaches
// the driver that owns it only through Driver (driver.go): memory
// admission and accounting, the allocation holding an address, the queues
// left to the device, neighbours, fault hooks and counters; and it calls
// Driver holding none of its own locks.
//
// A doorbell's whole journey stays on its Core: a semaphore increment
// from the driver (WriteSemaphore), a BAR0 store (Apply), a mapped store
// the sweeper finds, or a DMA write reaches onSemIncrement; Doorbell.Ring
// queues it, beginDoorbell arms the exec queues, finishDoorbell runs the
// delivered request (runPrograms: the sequencers, whose records go to the
// core's NOTIFIC block) or, with none, a semantic START and END.
// docs/architecture.md draws it.
//
// # Where a new behaviour goes
//
//   - Something one NeuronCore does or holds: a method of Core, in the
//     file of its job (above), reaching the chip through coreChip.
//   - Something that spans the cores (memory, routes, BAR0, the PCI
//     function): Chip, which internal/codecheck holds to 45 methods;
//     a job of its own gets a type of its own.
//   - A new register or firmware behaviour: chip/mmio; an engine's
//     instruction: chip/seq; a descriptor or queue behaviour: chip/dma.
//   - Anything the driver decides (who may, which process, which handle):
//     package device, reached only through Driver.
package chip
