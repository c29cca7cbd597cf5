//go:build !amd64 && !arm64

package lockrank

import "runtime"

// goroutineKey identifies the calling goroutine by the id in its stack
// header: slower than reading the g register, which only amd64 and arm64
// do here (goroutine_asm.go).
func goroutineKey() uintptr {
	var buf [40]byte
	n := runtime.Stack(buf[:], false)
	b := buf[len("goroutine "):n]
	var id uintptr
	for _, c := range b {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uintptr(c-'0')
	}
	return id
}
