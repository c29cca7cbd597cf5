// Package device is the emulated Neuron driver of one host: System holds
// what spans devices (core reservations, pinned memory, the memory limit,
// metrics mode, the pod election, fault switches) and each Device the
// driver's per-device state: the attach table, open counts and device
// state, the allocator (device/mempool) and handles, notification and
// h2t rings, datastore slots, the reset engine, counters and the ioctl
// handlers (dispatch.go, commands.go) and sysfs attributes, independent
// of how requests arrive.
//
// # What lives here
//
// Device keeps the attach table, open count, device state and the lock
// (d.mu); coherent pieces of its state are types of their own that it
// holds as fields, each owning its fields and the methods on them, all
// under d.mu unless they say otherwise:
//
//   - memory (memory.go): the allocator and its handles over the chip's
//     memory, frees, and pinned views of chunks; the pool locks itself.
//   - datastores (datastore.go): the 16 datastore slots, their lookup,
//     reuse order and release into the metrics.
//   - resetEngine (reset.go): pending and unreaped reset requests, the
//     worker that serves them, and the reset-ready wait.
//   - h2tTable (h2t.go, h2tring.go, h2tcompl.go, asynccopy.go): queues
//     claimed with H2T_DMA_ALLOC_QUEUES, the cores' default driver rings,
//     their async completion queues and async-copy contexts.
//   - nqTable (nq.go): notification rings by core and TOP_SP.
//   - waiters (wait.go): the wake-up channel and the driver's waits,
//     which drop d.mu (through a pointer to it) while they sleep.
//   - crwlState (crwl.go): the per-core cooperative reader/writer locks.
//   - powerState (power.go): the driver's utilisation samples, owned by
//     the sampling goroutine.
//   - dmaState (dma.go): which process owns which engine queue, the
//     dummy ring, host-driven queues; their release at process exit and
//     after a reset.
//
// Types that must reach device-wide state (memory, chip, metrics) hold a
// pointer back to their Device; none has a lock of its own.
//
// System likewise keeps the device list, the configuration and the
// host-wide lock (s.mu), and holds its jobs as types of their own:
//
//   - identity (identity.go): the devices' serial numbers and the EC2
//     instance id and UUID, fixed at NewSystem.
//   - budgets (budget.go): the watchdog's request budgets; System keeps
//     the exported Budget, OpenBudget, FlushBudget and ReleaseBudget.
//   - Faults (faults.go, faultspec.go): the fault switches, fault lists
//     (Faults().Apply), the faults control file and the engines' hook.
//   - exitWatch (watch.go): the pidfds of attached processes and the
//     release of a process that died attached.
//   - pinTable (pin.go): pinned host ranges by process.
//   - coreMarks (coremarks.go, reserve.go): host-wide core reservations
//     and the pod election's unmark notice.
//   - powerSampler (powersampler.go) and the semaphore-window sweeper:
//     background goroutines, each a loop (loop.go) that Close halts.
//   - Sysfs (hostsysfs.go, classattrs.go, dmi.go, control.go): a view
//     that builds the host-wide sysfs directories and neuronfs's control
//     files from the System's state (System.Sysfs()).
//
// exitWatch, pinTable and coreMarks hold a pointer back to their System
// and work under s.mu; none has a lock of its own.
//
// # How a request travels
//
// A transport (package fs: a FUSE request, or the seccomp supervisor's
// call on a direct descriptor) names the caller (Caller) and builds a
// Request: the open File, the command, the argument's address and copied
// bytes, and the caller's memory. System.Ioctl (dispatch.go) routes it as
// the driver does: the free-access lane, the attach gate, the command by
// value and then by its _IOC_NR family, to the handler of the command's
// row (commands.go). The handler decodes its struct through the
// request's memory, takes its locks in rank order (internal/lockrank),
// acts on driver state and on the chip through its methods, waits where
// the driver waits (wait.go: bounded, no lock held) and returns a Result.
// Opens, flushes and releases take the same road to Device.Open,
// File.Flush and File.Release; sysfs reads and writes go to the attribute
// tables (sysfs.go, pci.go, hostsysfs.go), never through dispatch.
//
// The silicon is package chip: each Device holds one *chip.Chip (memory,
// engines, BAR0 and firmware) with one chip.Core per NeuronCore
// (semaphores and events, doorbell, notification block, sequencers), and
// answers what the chip asks of the driver through chipHost
// (chiphost.go). Handlers reach the hardware only through the chip's and
// the cores' methods, and never compute a chip offset (a semaphore
// command names the window and index; the core knows where they lie);
// the chip never imports device.
//
// # Where a new behaviour goes
//
//   - A new ioctl command: its row in commands.go (the guide there says
//     how), its handler in the file of its facility.
//   - New per-device driver state: a type of its own held by Device, in
//     a file of its own, under d.mu unless it says otherwise; Device
//     keeps the attach table and the lock.
//   - New host-wide state: a type held by System; internal/codecheck
//     holds System and Device to 50 methods and every function to 80
//     lines.
//   - What the silicon does (registers, engines, a core's semaphores):
//     package chip, on Chip if it spans cores, else on Core; the driver
//     only calls it.
//   - A new sysfs attribute: a row in the attribute table of its
//     directory.
package device
