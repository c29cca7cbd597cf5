package device

import (
	"encoding/binary"
	"slices"
	"syscall"

	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/pod"
)

// UltraServer pod ioctls. On V2 and on standard V3/V4 hosts there is no
// pod: every call reports a single node. On UltraServer and PDS hosts the
// answers come from the pod election (package pod).

const (
	podStateSingleNode = 4  // NEURON_POD_E_STATE_SINGLE_NODE
	podTypeNone        = 0  // NEURON_POD_TYPE_NONE
	podNodeNone        = -1 // no node id
)

func podInfo(r *Request) Result {
	var v ioctl.PodInfo
	if _, res := copyInPodVariant(r, ioctl.Bytes(&v), ioctl.CmdPodInfo); res != 0 {
		return res
	}
	v = ioctl.PodInfo{Sz: uint16(ioctl.Sizeof[ioctl.PodInfo]()), PodType: podTypeNone}
	if e := r.Sys().pod; e != nil {
		info := e.Info()
		v.PodType, v.PodSz = info.Type, info.Size
		binary.LittleEndian.PutUint64(v.PodID[:], info.Serial)
	}
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
	if res := r.readUser(full[:size], r.Arg); res != 0 {
		return 0, res
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
	v = ioctl.PodStatusV2{}
	v.V1.Sz = uint16(size)
	v.V1.State = podStateSingleNode
	v.V1.NodeID = podNodeNone
	v.V1.PodType = podTypeNone
	var errno syscall.Errno
	if e := r.Sys().pod; e != nil {
		// Status first, then the data it vouches for, as the driver reads them.
		v.V1.State, v.V1.NodeID, errno = e.Status()
		info := e.Info()
		v.V1.PodType, v.V1.PodSz = info.Type, info.Size
		binary.LittleEndian.PutUint64(v.V1.PodID[:], info.Serial)
		v.Mode, v.ModesSupported = uint32(info.Mode), info.ModesSupported
	}
	if res := copyOutBytes(r, r.Arg, ioctl.Bytes(&v)[:size]); res != 0 || errno == 0 {
		return res
	}
	// EBUSY while electing: the struct went back all the same.
	return Errno(errno)
}

func podCtrl(r *Request) Result {
	var v ioctl.PodCtrlV2
	size, res := copyInPodVariant(r, ioctl.Bytes(&v), ioctl.CmdPodCtrl, ioctl.CmdPodCtrlV2)
	if res != 0 {
		return res
	}
	if r.Cmd == ioctl.CmdPodCtrl {
		v.Mode = uint32(pod.ModeUnset) // the V1 struct has no mode
	}
	buf := ioctl.Bytes(&v)[:size]
	s := r.Sys()
	var errno syscall.Errno
	switch {
	case s.Arch.Arch == dhal.V2:
		v.V1.State = podStateSingleNode
	case s.pod == nil:
		// V3/V4 standard: nothing happens, the state goes back as passed.
	default:
		v.V1.State, errno = s.pod.Ctrl(v.V1.Ctrl, pod.Mode(v.Mode), v.V1.Timeout)
	}
	if res := copyOutBytes(r, r.Arg, buf); res != 0 || errno == 0 {
		return res
	}
	return Errno(errno)
}
