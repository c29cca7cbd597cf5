package ia32

// int80 is in int80_amd64.s.
func int80(nr, a1, a2, a3 uintptr) uintptr
