package ioctl

import "syscall"

func syscallErrno(n int) syscall.Errno { return syscall.Errno(n) }
