// Package seq interprets the TPB instruction streams: one Sequencer per
// engine (PE, ACT, POOL, DVE, SP) per core walks that engine's image of
// 64-byte records, honours each record's wait predicate and update on the
// core's semaphores and events, follows branches, performs CSR writes and
// emits notifications. The compute records whose layout and effect the
// sources give (computeOps) run on the core's SBUF and PSUM; the others
// keep their events tuple, so ordering stays exact, and are counted
// instead of computed. The element-wise records hand runs of contiguous
// elements to typed row loops where their patterns allow (rows.go) and
// walk element by element elsewhere, with the same results bit for bit.
//
// The package knows nothing of the chip around it. A core hands each
// sequencer its image (Memory), its semaphores and events (Sync), its CSR
// space (CSR) and a notification sink; docs/isa.md lists every layout fact
// used here with its source and whether it is documented or guessed.
//
// A sequencer holds no lock: its state belongs to the goroutine running
// it, what others read (status, counters) is published atomically, and
// Run waits on a channel the Sync hands out, so a wait never holds
// anything. A core may instead interpret a run in steps (Exec): Resume
// returns at a wait that does not hold, and Ready re-checks it, so one
// goroutine can run several engines and none needs a goroutine to wait.
package seq
