package runtime_test

import "unsafe"

func unsafeAddr(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }
