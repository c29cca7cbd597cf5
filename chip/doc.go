// Package chip is the silicon of one emulated Neuron device: a Chip owns
// the physical memory (a memfd or backing file) and the HBM scrub
// pattern, the DMA address space with its routes to neighbours and host
// memory and the engines, BAR0 with the firmware behind misc RAM, the
// NOTIFIC blocks, the cores' semaphore and event areas and their sweeper,
// the exec doorbells, the sequencers (chip/seq) that run staged programs
// and the PCI function's config space.
//
// A Chip knows nothing of processes, handles or ioctls. It reaches the
// driver that owns it only through Driver (driver.go): memory admission
// and accounting, the allocation holding an address, the queues left to
// the device, neighbours, fault hooks and counters; and it calls Driver
// holding none of its own locks. Package device builds one Chip per
// device and never lets the chip import it.
//
// Files, one job each: chip.go (the Chip and its accessors), physmem.go,
// hbmpattern.go, space.go (address space and engines), route.go (the
// decoder's neighbours, aliases and semaphore windows), bar0.go,
// notific.go, sem.go and semareas.go (the areas), semsweep.go and
// sweepsleep.go (polling mapped stores), doorbell.go, semcas.go, exec.go
// (a doorbell's semantic run), execreq.go (delivered exec requests),
// execrun.go and execsync.go (the sequencers), corestatus.go, power.go
// (the firmware's utilisation model), pciconfig.go and pcicaps.go (the
// PCI function's config space).
package chip
