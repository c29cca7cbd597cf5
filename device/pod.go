package device

import (
	"syscall"

	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/ioctl"
)

// UltraServer pod ioctls. On V2 and on standard V3/V4 hosts there is no
// pod: every call reports a single node. Pod election (UltraServer) and
// the spoofed PDS answers are not emulated yet: on those platforms the
// commands answer as unsupported.

const (
	podStateSingleNode = 4  // NEURON_POD_E_STATE_SINGLE_NODE
	podTypeNone        = 0  // NEURON_POD_TYPE_NONE
	podNodeNone        = -1 // no node id
)

// podless reports whether this host is outside any pod.
func (s *System) podless() bool {
	return s.Arch.Arch == dhal.V2 || s.Instance.Platform == dhal.PlatformStandard
}

func podInfo(r *Request) Result {
	if r.Cmd != ioctl.CmdPodInfo {
		return Errno(syscall.EINVAL)
	}
	var v ioctl.PodInfo
	if n := copyIn(r, r.Arg, &v); n != 0 {
		return n
	}
	if int(v.Sz) != ioctl.Sizeof[ioctl.PodInfo]() {
		return Errno(syscall.EINVAL)
	}
	if !r.Sys().podless() {
		return unsupported(r)
	}
	v = ioctl.PodInfo{Sz: uint16(ioctl.Sizeof[ioctl.PodInfo]()), PodType: podTypeNone}
	return copyOut(r, r.Arg, &v)
}

func podStatus(r *Request) Result {
	var size int
	switch r.Cmd {
	case ioctl.CmdPodStatus:
		size = ioctl.Sizeof[ioctl.PodStatus]()
	case ioctl.CmdPodStatusV2:
		size = ioctl.Sizeof[ioctl.PodStatusV2]()
	default:
		return Errno(syscall.EINVAL)
	}
	var v ioctl.PodStatusV2
	buf := ioctl.Bytes(&v)[:size]
	if n, _ := r.Mem.ReadAt(buf, r.Arg); n < size {
		return notCopied(size, n)
	}
	if int(v.V1.Sz) != size {
		return Errno(syscall.EINVAL)
	}
	if !r.Sys().podless() {
		return unsupported(r)
	}
	v = ioctl.PodStatusV2{}
	v.V1.Sz = uint16(size)
	v.V1.State = podStateSingleNode
	v.V1.NodeID = podNodeNone
	v.V1.PodType = podTypeNone
	return copyOutBytes(r, r.Arg, ioctl.Bytes(&v)[:size])
}

func podCtrl(r *Request) Result {
	var size int
	switch r.Cmd {
	case ioctl.CmdPodCtrl:
		size = ioctl.Sizeof[ioctl.PodCtrl]()
	case ioctl.CmdPodCtrlV2:
		size = ioctl.Sizeof[ioctl.PodCtrlV2]()
	default:
		return Errno(syscall.EINVAL)
	}
	var v ioctl.PodCtrlV2
	buf := ioctl.Bytes(&v)[:size]
	if n, _ := r.Mem.ReadAt(buf, r.Arg); n < size {
		return notCopied(size, n)
	}
	if int(v.V1.Sz) != size {
		return Errno(syscall.EINVAL)
	}
	s := r.Sys()
	switch {
	case s.Arch.Arch == dhal.V2:
		v.V1.State = podStateSingleNode
	case s.Instance.Platform == dhal.PlatformStandard:
		// V3/V4 standard: nothing happens, the state goes back as passed.
	default:
		return unsupported(r)
	}
	return copyOutBytes(r, r.Arg, buf)
}
