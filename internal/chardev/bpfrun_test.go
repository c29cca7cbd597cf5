package chardev

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

// run interprets the filter on one syscall as the kernel would (the
// opcodes the filter uses only) and returns its action.
func run(t *testing.T, prog []unix.SockFilter, arch uint32, nr int, args ...uint64) uint32 {
	t.Helper()
	var data [64]byte
	binary.LittleEndian.PutUint32(data[offNr:], uint32(nr))
	binary.LittleEndian.PutUint32(data[offArch:], arch)
	for i, a := range args {
		binary.LittleEndian.PutUint64(data[offArgs+8*i:], a)
	}
	var acc, x uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		cond := func(ok bool) {
			if ok {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		}
		switch in.Code {
		case bpfLdW:
			acc = binary.LittleEndian.Uint32(data[in.K:])
		case bpfJeq:
			cond(acc == in.K)
		case bpfJge:
			cond(acc >= in.K)
		case bpfJset:
			cond(acc&in.K != 0)
		case bpfJgtX:
			cond(acc > x)
		case bpfJeqX:
			cond(acc == x)
		case bpfJa:
			pc += int(in.K)
		case bpfAnd:
			acc &= in.K
		case bpfTax:
			x = acc
		case bpfRet:
			return in.K
		default:
			t.Fatalf("opcode %#x at %d not interpreted", in.Code, pc)
		}
	}
	t.Fatal("filter fell off its end")
	return 0
}

// neuronType is the driver's ioctl type byte ('N', ioctl.Magic, which
// this package may not import): the filter is given it.
const neuronType = 'N'
