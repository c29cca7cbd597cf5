package trace

import (
	"fmt"

	"github.com/cilium/ebpf/asm"

	"github.com/neuronfs/neuronfs/ioctl"
)

// The eBPF side, written with cilium's asm package (no C compiler needed).
// It sees every syscall on the machine through the raw sys_enter/sys_exit
// tracepoints, keeps those of the traced tgids that can touch a device
// (open, close, ioctl, mmap, munmap), and sends one fixed-size event per
// entry and per exit to Go through a ring buffer. It cannot know what file
// an fd is; Go resolves that and drops the rest.

// x86_64 syscall numbers the program keeps.
const (
	sysOpen    = 2
	sysClose   = 3
	sysMmap    = 9
	sysMunmap  = 11
	sysIoctl   = 16
	sysOpenat  = 257
	sysOpenat2 = 437
)

// Event layout (little endian), shared with event.go.
const (
	evTime     = 0                   // u64 bpf_ktime_get_ns
	evPidTgid  = 8                   // u64 tgid<<32 | tid
	evKind     = 16                  // u32 kindEnter, kindExit
	evDataLen  = 20                  // u32 bytes of data read
	evNr       = 24                  // u64 syscall number
	evRet      = 32                  // s64 return value (exit)
	evRegs     = 40                  // struct pt_regs bytes 56..128: r10 r9 r8 ax cx dx si di orig_ax
	evData     = 112                 // ioctl argument, or open's file name
	evNestLen  = evData + argCopy    // u32 ×2: bytes read of each nested buffer
	evNest     = evNestLen + 8       // 2 × nestCopy
	eventSize  = evNest + 2*nestCopy // an ioctl's event
	pathEvent  = evData + pathCopy   // an open's
	shortEvent = evData              // the others': registers only
	argCopy    = 512                 // bytes of an ioctl argument copied; Go trims to the struct size
	nestCopy   = 256                 // bytes of a pointed-to buffer copied (abi.NestedCap)
	regsOffset = 56                  // offset of r10 in x86_64 struct pt_regs
	regsLen    = 72
	origAxOff  = 120 // offset of orig_ax in x86_64 struct pt_regs
	pathCopy   = 256

	kindEnter = 1
	kindExit  = 2
	kindFork  = 3 // a traced task made a thread or process
	kindExec  = 4
	kindDeath = 5 // a traced thread exited
)

// Event offsets of the copied registers that carry syscall arguments.
const (
	regR10 = evRegs + 56 - regsOffset
	regR9  = evRegs + 64 - regsOffset
	regR8  = evRegs + 72 - regsOffset
	regDX  = evRegs + 96 - regsOffset
	regSI  = evRegs + 104 - regsOffset
	regDI  = evRegs + 112 - regsOffset
)

// argRegs holds the x86_64 syscall argument registers in order.
var argRegs = [6]int{regDI, regSI, regDX, regR10, regR8, regR9}

// maps is what the programs refer to, by fd.
type progMaps struct {
	tgids, inflight, nested, events, lost, devfds int
}

// Stack slots (offsets from R10).
const (
	stKey   = -4  // u32 map key
	stArg   = -16 // u64 argument pointer / scratch
	stLen   = -24 // u64 length being read
	stNPtr  = -32 // u64 nested pointer
	stNLen  = -40 // u64 nested length
	stValue = -48 // u32 map value
	stSI    = -64 // u64 rsi, then rdi at -56
	stFdKey = -72 // u64 tgid<<32 | fd
)

// ioctlFilter skips to skip an ioctl that is neither a Neuron command
// (type 'N') nor on an fd Go has seen to be a device (the devfds map):
// other programs' ioctls (a seccomp supervisor's, a terminal's) would
// flood the ring. R7 holds pid_tgid; R6 the context.
func ioctlFilter(m progMaps, skip string) asm.Instructions {
	return asm.Instructions{
		asm.Mov.Reg(asm.R1, asm.RFP),
		asm.Add.Imm(asm.R1, stSI),
		asm.Mov.Imm(asm.R2, 16),
		asm.LoadMem(asm.R3, asm.R6, 0, asm.DWord),
		asm.Add.Imm(asm.R3, 104), // rsi, rdi in struct pt_regs
		asm.FnProbeReadKernel.Call(),
		asm.JNE.Imm(asm.R0, 0, skip),
		asm.LoadMem(asm.R1, asm.RFP, stSI, asm.DWord),
		asm.RSh.Imm(asm.R1, 8),
		asm.And.Imm(asm.R1, 0xff),
		asm.JEq.Imm(asm.R1, int32(ioctl.Magic), "ioctl_keep"),
		asm.Mov.Reg(asm.R1, asm.R7),
		asm.RSh.Imm(asm.R1, 32),
		asm.LSh.Imm(asm.R1, 32),
		asm.LoadMem(asm.R2, asm.RFP, stSI+8, asm.Word), // the fd: rdi's low half
		asm.Or.Reg(asm.R1, asm.R2),
		asm.StoreMem(asm.RFP, stFdKey, asm.R1, asm.DWord),
		asm.LoadMapPtr(asm.R1, m.devfds),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, stFdKey),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, skip),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("ioctl_keep"),
	}
}

// tgidFilter returns from the program unless the current tgid is traced;
// it leaves pid_tgid in R7.
func tgidFilter(m progMaps, exit string) asm.Instructions {
	insns := asm.Instructions{
		asm.FnGetCurrentPidTgid.Call(),
		asm.Mov.Reg(asm.R7, asm.R0),
		asm.RSh.Imm(asm.R0, 32),
		asm.StoreMem(asm.RFP, stKey, asm.R0, asm.Word),
	}
	insns = append(insns, mapKey(m.tgids, stKey)...)
	return append(insns, asm.FnMapLookupElem.Call(), asm.JEq.Imm(asm.R0, 0, exit))
}

// reserve takes a ring buffer slot into R9, as big as the syscall in R8
// needs, and fills the header.
func reserve(m progMaps, kind int32, exit string) asm.Instructions {
	insns := asm.Instructions{
		asm.Mov.Imm(asm.R2, eventSize),
		asm.JEq.Imm(asm.R8, sysIoctl, "sized"),
		asm.Mov.Imm(asm.R2, pathEvent),
		asm.JEq.Imm(asm.R8, sysOpen, "sized"),
		asm.JEq.Imm(asm.R8, sysOpenat, "sized"),
		asm.JEq.Imm(asm.R8, sysOpenat2, "sized"),
		asm.Mov.Imm(asm.R2, shortEvent),
		asm.LoadMapPtr(asm.R1, m.events).WithSymbol("sized"),
		asm.Mov.Imm(asm.R3, 0),
	}
	insns = append(insns, reserveHeader(kind)...)
	return append(insns,
		asm.StoreMem(asm.R9, evNr, asm.R8, asm.DWord),
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(asm.R9, evRet, asm.R1, asm.DWord),
		asm.FnKtimeGetNs.Call(),
		asm.StoreMem(asm.R9, evTime, asm.R0, asm.DWord),
		// The registers: the syscall's arguments and number.
		asm.Mov.Reg(asm.R1, asm.R9),
		asm.Add.Imm(asm.R1, evRegs),
		asm.Mov.Imm(asm.R2, regsLen),
		asm.LoadMem(asm.R3, asm.R6, 0, asm.DWord), // ctx->args[0]: struct pt_regs *
		asm.Add.Imm(asm.R3, regsOffset),
		asm.FnProbeReadKernel.Call(),
	)
}

// readUser copies up to max bytes from the user address in stack slot ptr
// to R9+dst and stores the count at R9+lenAt. A copy that faults is tried
// again up to the end of the address's page, so a small struct at the end
// of a mapping is still read.
func readUser(p string, ptr int16, max int32, dst, lenAt int16) asm.Instructions {
	return asm.Instructions{
		asm.Mov.Reg(asm.R1, asm.R9),
		asm.Add.Imm(asm.R1, int32(dst)),
		asm.LoadMem(asm.R2, asm.RFP, stLen, asm.DWord),
		asm.LoadMem(asm.R3, asm.RFP, ptr, asm.DWord),
		asm.FnProbeReadUser.Call(),
		asm.JNE.Imm(asm.R0, 0, p+"short"),
		asm.LoadMem(asm.R2, asm.RFP, stLen, asm.DWord),
		asm.StoreMem(asm.R9, lenAt, asm.R2, asm.Word),
		asm.Ja.Label(p + "done"),
		asm.LoadMem(asm.R2, asm.RFP, ptr, asm.DWord).WithSymbol(p + "short"),
		asm.And.Imm(asm.R2, 4095),
		asm.Mov.Imm(asm.R1, 4096),
		asm.Sub.Reg(asm.R1, asm.R2),
		asm.LoadMem(asm.R2, asm.RFP, stLen, asm.DWord),
		// Within one page already: that page is not readable.
		asm.JGE.Reg(asm.R1, asm.R2, p+"done"),
		asm.JGT.Imm(asm.R1, max, p+"done"),
		asm.StoreMem(asm.RFP, stLen, asm.R1, asm.DWord),
		asm.Mov.Reg(asm.R2, asm.R1),
		asm.Mov.Reg(asm.R1, asm.R9),
		asm.Add.Imm(asm.R1, int32(dst)),
		asm.LoadMem(asm.R3, asm.RFP, ptr, asm.DWord),
		asm.FnProbeReadUser.Call(),
		asm.JNE.Imm(asm.R0, 0, p+"done"),
		asm.LoadMem(asm.R2, asm.RFP, stLen, asm.DWord),
		asm.StoreMem(asm.R9, lenAt, asm.R2, asm.Word),
		asm.Mov.Imm(asm.R0, 0).WithSymbol(p + "done"),
	}
}

// copyArg copies the ioctl argument at the pointer in stArg, then the
// buffers its pointer members point at, as the nested map (filled by Go
// from the ABI table) lists them for the command.
func copyArg(m progMaps, p string, done string) asm.Instructions {
	insns := asm.Instructions{
		asm.StoreImm(asm.R9, evNestLen, 0, asm.Word),
		asm.StoreImm(asm.R9, evNestLen+4, 0, asm.Word),
		asm.Mov.Imm(asm.R1, argCopy),
		asm.StoreMem(asm.RFP, stLen, asm.R1, asm.DWord),
	}
	insns = append(insns, readUser(p+"arg_", stArg, argCopy, evData, evDataLen)...)
	insns = append(insns,
		asm.LoadMem(asm.R1, asm.R9, evDataLen, asm.Word),
		asm.JEq.Imm(asm.R1, 0, done),
		// The command (the ioctl's second argument, from the registers).
		asm.LoadMem(asm.R1, asm.R9, regSI, asm.DWord),
		asm.StoreMem(asm.RFP, stKey, asm.R1, asm.Word),
	)
	insns = append(insns, mapKey(m.nested, stKey)...)
	insns = append(insns,
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, done),
		asm.Mov.Reg(asm.R8, asm.R0),
	)
	for i := int16(0); i < 2; i++ {
		q := fmt.Sprintf("%sn%d_", p, i)
		next := q + "next"
		insns = append(insns,
			asm.LoadMem(asm.R1, asm.R8, 8*i, asm.Word),   // member offset
			asm.LoadMem(asm.R2, asm.R8, 8*i+4, asm.Word), // bytes wanted
			asm.JEq.Imm(asm.R2, 0, next),
			asm.JLE.Imm(asm.R2, nestCopy, q+"len"),
			asm.Mov.Imm(asm.R2, nestCopy),
			asm.StoreMem(asm.RFP, stLen, asm.R2, asm.DWord).WithSymbol(q+"len"),
			asm.JGT.Imm(asm.R1, argCopy-8, next),
			asm.Mov.Reg(asm.R3, asm.R9),
			asm.Add.Imm(asm.R3, evData),
			asm.Add.Reg(asm.R3, asm.R1),
			asm.LoadMem(asm.R3, asm.R3, 0, asm.DWord),
			asm.StoreMem(asm.RFP, stNPtr, asm.R3, asm.DWord),
		)
		insns = append(insns, readUser(q, stNPtr, nestCopy, evNest+nestCopy*i, evNestLen+4*i)...)
		insns = append(insns, asm.Mov.Imm(asm.R0, 0).WithSymbol(next))
	}
	return append(insns, asm.Ja.Label(done))
}

// Ring buffer flags and query.
const (
	rbNoWakeup    = 1
	rbForceWakeup = 2
	rbAvailData   = 0
	// wakeAt is the fill level at which the reader is woken; below it, the
	// reader finds the events when it polls (see Session.loop). A wakeup
	// per event would cost the traced process a context switch per call.
	wakeAt = ringSize / 4
)

func submit(m progMaps, label string) asm.Instructions {
	return asm.Instructions{
		asm.LoadMapPtr(asm.R1, m.events).WithSymbol(label),
		asm.Mov.Imm(asm.R2, rbAvailData),
		asm.FnRingbufQuery.Call(),
		asm.Mov.Imm(asm.R2, rbNoWakeup),
		asm.JLT.Imm(asm.R0, wakeAt, label+"_go"),
		asm.Mov.Imm(asm.R2, rbForceWakeup),
		asm.Mov.Reg(asm.R1, asm.R9).WithSymbol(label + "_go"),
		asm.FnRingbufSubmit.Call(),
		asm.Mov.Imm(asm.R0, 0),
		asm.Return(),
	}
}

func exitLabel(label string) asm.Instructions {
	return asm.Instructions{asm.Mov.Imm(asm.R0, 0).WithSymbol(label), asm.Return()}
}

// lostLabel counts an event the full ring buffer had no room for, so the
// trace can say it is incomplete.
func lostLabel(m progMaps) asm.Instructions {
	return asm.Instructions{
		asm.StoreImm(asm.RFP, stKey, 0, asm.Word).WithSymbol("lost"),
		asm.LoadMapPtr(asm.R1, m.lost),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, stKey),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "lost_done"),
		asm.Mov.Imm(asm.R1, 1),
		asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("lost_done"),
		asm.Return(),
	}
}

// prologue leaves the program unless the current tgid is traced; it keeps
// the context in R6 and pid_tgid in R7. Every program starts with it.
func prologue(m progMaps) asm.Instructions {
	return append(asm.Instructions{asm.Mov.Reg(asm.R6, asm.R1)}, tgidFilter(m, "exit")...)
}

// epilogue ends every program: the submit of the event in R9, then the
// targets "lost" and "exit" that the rest jumps to.
func epilogue(m progMaps) asm.Instructions {
	insns := submit(m, "submit")
	insns = append(insns, lostLabel(m)...)
	return append(insns, exitLabel("exit")...)
}

// syscallEvent leaves the program unless R8, a syscall number, is one of
// kept or an ioctl ioctlFilter keeps, then reserves an event of kind.
func syscallEvent(m progMaps, kind int32, kept ...int32) asm.Instructions {
	insns := asm.Instructions{asm.JEq.Imm(asm.R8, sysIoctl, "is_ioctl")}
	for _, nr := range kept {
		insns = append(insns, asm.JEq.Imm(asm.R8, nr, "keep"))
	}
	insns = append(insns, asm.Ja.Label("exit"), asm.Mov.Imm(asm.R0, 0).WithSymbol("is_ioctl"))
	insns = append(insns, ioctlFilter(m, "exit")...)
	insns = append(insns, asm.Mov.Imm(asm.R0, 0).WithSymbol("keep"))
	return append(insns, reserve(m, kind, "exit")...)
}

// mapKey points R1 at the map and R2 at the key in the stack slot key,
// the arguments of every map helper.
func mapKey(fd int, key int16) asm.Instructions {
	return asm.Instructions{
		asm.LoadMapPtr(asm.R1, fd),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, int32(key)),
	}
}

// enterProg handles raw tracepoint sys_enter(regs, id).
func enterProg(m progMaps) asm.Instructions {
	insns := prologue(m)
	insns = append(insns, asm.LoadMem(asm.R8, asm.R6, 8, asm.DWord)) // ctx->args[1]: syscall number
	insns = append(insns, syscallEvent(m, kindEnter, sysMmap, sysMunmap, sysClose)...)
	insns = append(insns,
		asm.JNE.Imm(asm.R8, sysIoctl, "submit"),
		// Remember the argument pointer for the exit.
		asm.LoadMem(asm.R1, asm.R9, regDX, asm.DWord), // dx
		asm.StoreMem(asm.RFP, stArg, asm.R1, asm.DWord),
	)
	insns = append(insns, asm.StoreMem(asm.RFP, stKey, asm.R7, asm.Word)) // tid
	insns = append(insns, mapKey(m.inflight, stKey)...)
	insns = append(insns,
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, stArg),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnMapUpdateElem.Call(),
	)
	insns = append(insns, copyArg(m, "in_", "submit")...)
	return append(insns, epilogue(m)...)
}

// exitProg handles raw tracepoint sys_exit(regs, ret). A syscall a seccomp
// supervisor answered (as `neuronfs run` does for device opens) has no
// sys_enter, so the exit reads everything from the registers.
func exitProg(m progMaps) asm.Instructions {
	insns := prologue(m)
	insns = append(insns,
		asm.Mov.Reg(asm.R1, asm.RFP),
		asm.Add.Imm(asm.R1, stArg),
		asm.Mov.Imm(asm.R2, 8),
		asm.LoadMem(asm.R3, asm.R6, 0, asm.DWord),
		asm.Add.Imm(asm.R3, origAxOff),
		asm.FnProbeReadKernel.Call(),
		asm.JNE.Imm(asm.R0, 0, "exit"),
		asm.LoadMem(asm.R8, asm.RFP, stArg, asm.DWord),
	)
	insns = append(insns, syscallEvent(m, kindExit, sysMmap, sysMunmap, sysClose, sysOpen, sysOpenat, sysOpenat2)...)
	insns = append(insns,
		asm.LoadMem(asm.R1, asm.R6, 8, asm.DWord), // ctx->args[1]: return value
		asm.StoreMem(asm.R9, evRet, asm.R1, asm.DWord),
		asm.JEq.Imm(asm.R8, sysOpen, "open"),
		asm.JEq.Imm(asm.R8, sysOpenat, "openat"),
		asm.JEq.Imm(asm.R8, sysOpenat2, "openat"),
		asm.JNE.Imm(asm.R8, sysIoctl, "submit"),
	)
	// ioctl: the pointer saved at entry (none if the entry was missed).
	insns = append(insns, asm.StoreMem(asm.RFP, stKey, asm.R7, asm.Word))
	insns = append(insns, mapKey(m.inflight, stKey)...)
	insns = append(insns,
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "submit"),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.StoreMem(asm.RFP, stArg, asm.R1, asm.DWord),
	)
	insns = append(insns, mapKey(m.inflight, stKey)...)
	insns = append(insns, asm.FnMapDeleteElem.Call())
	insns = append(insns, copyArg(m, "out_", "submit")...)
	insns = append(insns,
		asm.LoadMem(asm.R3, asm.R9, regDI, asm.DWord).WithSymbol("open"), // di
		asm.Ja.Label("path"),
		asm.LoadMem(asm.R3, asm.R9, regSI, asm.DWord).WithSymbol("openat"), // si
		asm.Mov.Reg(asm.R1, asm.R9).WithSymbol("path"),
		asm.Add.Imm(asm.R1, evData),
		asm.Mov.Imm(asm.R2, pathCopy),
		asm.FnProbeReadUserStr.Call(),
		asm.JSLE.Imm(asm.R0, 0, "submit"),
		asm.StoreMem(asm.R9, evDataLen, asm.R0, asm.Word),
	)
	return append(insns, epilogue(m)...)
}

// taskOffsets are the kernel structure members the lifetime programs read,
// found in the kernel's BTF (see taskLayout).
type taskOffsets struct {
	pid, tgid, exitCode, signal int32 // in task_struct
	live                        int32 // in signal_struct: threads not yet exited
	filename                    int32 // in linux_binprm
}

// reserveHeader reserves the ring buffer slot R1..R3 ask for into R9
// (or counts the event lost) and writes the header every event has.
func reserveHeader(kind int32) asm.Instructions {
	return asm.Instructions{
		asm.FnRingbufReserve.Call(),
		asm.JEq.Imm(asm.R0, 0, "lost"),
		asm.Mov.Reg(asm.R9, asm.R0),
		asm.StoreMem(asm.R9, evPidTgid, asm.R7, asm.DWord),
		asm.StoreImm(asm.R9, evKind, int64(kind), asm.Word),
		asm.StoreImm(asm.R9, evDataLen, 0, asm.Word),
	}
}

// lifeEvent reserves a short event of the given kind for the current task
// (pid_tgid in R7) into R9 and zeroes what a syscall event would carry.
func lifeEvent(m progMaps, kind int32, size int32) asm.Instructions {
	insns := asm.Instructions{
		asm.LoadMapPtr(asm.R1, m.events),
		asm.Mov.Imm(asm.R2, size),
		asm.Mov.Imm(asm.R3, 0),
	}
	insns = append(insns, reserveHeader(kind)...)
	insns = append(insns, asm.Mov.Imm(asm.R1, 0))
	for off := int16(evNr); off < evData; off += 8 {
		insns = append(insns, asm.StoreMem(asm.R9, off, asm.R1, asm.DWord))
	}
	return append(insns,
		asm.FnKtimeGetNs.Call(),
		asm.StoreMem(asm.R9, evTime, asm.R0, asm.DWord),
	)
}

// readKernel copies size bytes at R3+off (R3: a kernel pointer) to the
// stack slot dst, or leaves the program.
func readKernel(dst int16, size int32, off int32) asm.Instructions {
	return asm.Instructions{
		asm.Add.Imm(asm.R3, off),
		asm.Mov.Reg(asm.R1, asm.RFP),
		asm.Add.Imm(asm.R1, int32(dst)),
		asm.Mov.Imm(asm.R2, size),
		asm.FnProbeReadKernel.Call(),
		asm.JNE.Imm(asm.R0, 0, "exit"),
	}
}

// forkProg handles raw tracepoint sched_process_fork(parent, child), which
// the parent runs for every new thread and process. It records a fork of a
// traced process; with children, a new process is traced too.
func forkProg(m progMaps, o taskOffsets, children bool) asm.Instructions {
	insns := prologue(m)
	insns = append(insns, asm.LoadMem(asm.R3, asm.R6, 8, asm.DWord)) // ctx->args[1]: the child's task_struct
	insns = append(insns, readKernel(stKey, 4, o.tgid)...)
	insns = append(insns, asm.LoadMem(asm.R3, asm.R6, 8, asm.DWord))
	insns = append(insns, readKernel(stValue, 4, o.pid)...)
	if children {
		insns = append(insns,
			asm.StoreImm(asm.RFP, stArg, 1, asm.Word),
			asm.LoadMapPtr(asm.R1, m.tgids),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, stKey),
			asm.Mov.Reg(asm.R3, asm.RFP),
			asm.Add.Imm(asm.R3, stArg),
			asm.Mov.Imm(asm.R4, 0),
			asm.FnMapUpdateElem.Call(),
		)
	}
	insns = append(insns, lifeEvent(m, kindFork, shortEvent)...)
	insns = append(insns,
		asm.LoadMem(asm.R1, asm.RFP, stValue, asm.Word),
		asm.StoreMem(asm.R9, regDI, asm.R1, asm.DWord), // args[0]: the child's tid
		asm.LoadMem(asm.R1, asm.RFP, stKey, asm.Word),
		asm.StoreMem(asm.R9, regSI, asm.R1, asm.DWord), // args[1]: its tgid
	)
	return append(insns, epilogue(m)...)
}

// execProg handles raw tracepoint sched_process_exec(task, old_pid, bprm):
// a traced process ran a new program, whose file name it records.
func execProg(m progMaps, o taskOffsets) asm.Instructions {
	insns := prologue(m)
	insns = append(insns, asm.LoadMem(asm.R3, asm.R6, 16, asm.DWord)) // ctx->args[2]: struct linux_binprm *
	insns = append(insns, readKernel(stArg, 8, o.filename)...)
	insns = append(insns, lifeEvent(m, kindExec, pathEvent)...)
	insns = append(insns,
		asm.LoadMem(asm.R1, asm.R6, 8, asm.DWord), // ctx->args[1]: the tid before exec
		asm.StoreMem(asm.R9, regDI, asm.R1, asm.DWord),
		asm.Mov.Reg(asm.R1, asm.R9),
		asm.Add.Imm(asm.R1, evData),
		asm.Mov.Imm(asm.R2, pathCopy),
		asm.LoadMem(asm.R3, asm.RFP, stArg, asm.DWord),
		asm.FnProbeReadKernelStr.Call(),
		asm.JSLE.Imm(asm.R0, 0, "submit"),
		asm.StoreMem(asm.R9, evDataLen, asm.R0, asm.Word),
	)
	return append(insns, epilogue(m)...)
}

// deathProg handles raw tracepoint sched_process_exit(task), which a thread
// runs as it exits, after its exit code is set and its process's count of
// live threads is dropped, and before its files are closed.
func deathProg(m progMaps, o taskOffsets) asm.Instructions {
	insns := prologue(m)
	insns = append(insns, asm.LoadMem(asm.R3, asm.R6, 0, asm.DWord)) // ctx->args[0]: the task
	insns = append(insns, readKernel(stValue, 4, o.exitCode)...)
	insns = append(insns, asm.LoadMem(asm.R3, asm.R6, 0, asm.DWord))
	insns = append(insns, readKernel(stArg, 8, o.signal)...)
	insns = append(insns, asm.LoadMem(asm.R3, asm.RFP, stArg, asm.DWord))
	insns = append(insns, readKernel(stKey, 4, o.live)...)
	insns = append(insns,
		// The process's last thread: stop following its tgid, which the
		// kernel may hand out again (and the map has room for others).
		asm.LoadMem(asm.R1, asm.RFP, stKey, asm.Word),
		asm.JNE.Imm(asm.R1, 0, "alive"),
		asm.Mov.Reg(asm.R1, asm.R7),
		asm.RSh.Imm(asm.R1, 32),
		asm.StoreMem(asm.RFP, stArg, asm.R1, asm.Word),
	)
	insns = append(insns, mapKey(m.tgids, stArg)...)
	insns = append(insns,
		asm.FnMapDeleteElem.Call(),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("alive"),
	)
	insns = append(insns, lifeEvent(m, kindDeath, shortEvent)...)
	insns = append(insns,
		asm.LoadMem(asm.R1, asm.RFP, stValue, asm.Word),
		asm.StoreMem(asm.R9, evRet, asm.R1, asm.DWord), // the exit code, as wait(2) reports it
		asm.LoadMem(asm.R1, asm.RFP, stKey, asm.Word),
		asm.StoreMem(asm.R9, regDI, asm.R1, asm.DWord), // args[0]: threads left
	)
	return append(insns, epilogue(m)...)
}
