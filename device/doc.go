// Package device is the emulated Neuron driver of one host: System holds
// what spans devices (core reservations, pinned memory, the memory limit,
// metrics mode, the pod election, fault switches) and each Device the
// driver's per-device state: the attach table, open counts and device
// state, the allocator (device/mempool) and handles, notification and
// h2t rings, datastore slots, the reset engine, counters and the ioctl
// handlers (dispatch.go, handlers.go) and sysfs attributes, independent
// of how requests arrive.
//
// The silicon is package chip: each Device holds one *chip.Chip (memory,
// engines, BAR0 and firmware, notification blocks, semaphores, doorbells,
// sequencers) and answers what the chip asks of the driver through
// chipHost (chiphost.go). Handlers reach the hardware only through the
// chip's methods; the chip never imports device.
package device
