// Package chip is the silicon of one emulated Neuron device. A Chip owns
// what spans its cores: the physical memory (a memfd or backing file) and
// the HBM scrub pattern, the DMA address space with its routes to
// neighbours and host memory and the engines, BAR0 with the firmware
// behind misc RAM, the TOP_SPs' NOTIFIC blocks, the sweeper of mapped
// semaphore windows, the watch that recognises exec requests in the DMA
// queues' copies, the firmware's power model and the PCI function's
// config space.
//
// A Core (Chip.Core) is one NeuronCore: its semaphore and event area, its
// exec doorbell, its NOTIFIC block, the exec request delivered to it, its
// staged runs and parked engines, its SBUF and PSUM, its sweep target and
// the range of its DMA engines. It is its sequencers' seq.Sync and
// seq.CSR, and reaches the chip only through coreChip (corelink.go):
// memory, engines, the driver's queues, allocations and counters, the
// tracer and the power model. A doorbell's whole journey (Apply or Sweep
// or a DMA write, onSemIncrement, Doorbell.Ring, beginDoorbell, finishDoorbell,
// runPrograms, the sequencers, the NOTIFIC records) stays on its Core.
//
// Neither knows anything of processes, handles or ioctls. They reach the
// driver that owns the chip only through Driver (driver.go): memory
// admission and accounting, the allocation holding an address, the queues
// left to the device, neighbours, fault hooks and counters; and they call
// Driver holding none of their own locks. Package device builds one Chip
// per device, calls a core's methods for its semaphores, events, resets
// and status, and never lets the chip import it.
//
// Files, one job each: chip.go (the Chip), physmem.go, hbmpattern.go,
// space.go (address space and engines), route.go (the decoder's
// neighbours, aliases and semaphore windows), bar0.go, notific.go, sem.go
// and semcas.go (an Area's words), semsweep.go and sweepsleep.go (polling
// mapped stores), power.go (the firmware's utilisation model),
// pciconfig.go and pcicaps.go (the PCI function's config space). The
// core's: core.go (its state), corelink.go (its view of the chip),
// hostsem.go (the host's stores), doorbell.go and doorbellqueue.go (a
// doorbell and its queue), request.go (delivered exec requests), run.go
// (staged runs), regrun.go (runs started by register), engineregs.go
// (the engines' and TOP_SPs' start registers in BAR0), sched.go (who runs
// the engines), sync.go (the engines' Sync and CSR), onchip.go (SBUF and
// PSUM), status.go (engine reports and hangs).
package chip
