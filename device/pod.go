package device

import (
	"encoding/binary"
	"slices"
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
	var v ioctl.PodInfo
	if _, res := copyInPodVariant(r, ioctl.Bytes(&v), ioctl.CmdPodInfo); res != 0 {
		return res
	}
	if !r.Sys().podless() {
		return unsupported(r)
	}
	v = ioctl.PodInfo{Sz: uint16(ioctl.Sizeof[ioctl.PodInfo]()), PodType: podTypeNone}
	return copyOut(r, r.Arg, &v)
}

// copyInPodVariant reads the variant of a pod struct that the command
// selects (its _IOC_SIZE leading bytes of full, the largest variant) and
// checks the struct's own leading size field against it, as the driver
// does for every pod command.
func copyInPodVariant(r *Request, full []byte, variants ...uint32) (int, Result) {
	if !slices.Contains(variants, r.Cmd) {
		return 0, Errno(syscall.EINVAL)
	}
	size := int(ioctl.Size(r.Cmd))
	if n, _ := r.Mem.ReadAt(full[:size], r.Arg); n < size {
		return 0, notCopied(size, n)
	}
	if int(binary.LittleEndian.Uint16(full)) != size {
		return 0, Errno(syscall.EINVAL)
	}
	return size, 0
}

func podStatus(r *Request) Result {
	var v ioctl.PodStatusV2
	size, res := copyInPodVariant(r, ioctl.Bytes(&v), ioctl.CmdPodStatus, ioctl.CmdPodStatusV2)
	if res != 0 {
		return res
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
	var v ioctl.PodCtrlV2
	size, res := copyInPodVariant(r, ioctl.Bytes(&v), ioctl.CmdPodCtrl, ioctl.CmdPodCtrlV2)
	if res != 0 {
		return res
	}
	buf := ioctl.Bytes(&v)[:size]
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
