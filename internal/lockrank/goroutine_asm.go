//go:build amd64 || arm64

package lockrank

// getg returns the address of the calling goroutine's runtime descriptor
// (goroutine_amd64.s, goroutine_arm64.s).
func getg() uintptr

// goroutineKey identifies the calling goroutine while it lives. It is read
// from the g register in one instruction: the checker runs on every lock
// and unlock of every test binary, and parsing runtime.Stack there cost
// most of the suite's CPU. Descriptors are reused only after a goroutine
// ends, and a goroutine never ends holding a daemon lock.
func goroutineKey() uintptr { return getg() }
