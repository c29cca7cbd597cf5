// Package pod emulates UltraServer pod election (the driver's "NUTD",
// v3/neuron_pelect.c): the servers of a pod read each other's misc RAM over
// their B-links, agree on node ids and a pod serial number, and report the
// result through POD_STATUS, POD_INFO and /sys/class/neuron_device. It also
// holds the PDS platform's spoofed answers.
//
// The package knows nothing about FUSE or ioctls. A server's devices are
// reached through MiscRAM; the other servers through a Coordinator, which
// carries what the real links carry: register reads of a neighbour's misc
// RAM.
package pod

import (
	"syscall"
)

// State is the election's internal state.
type State int

const (
	StateInit       State = 0 // no decision yet
	StateInProgress State = 1 // the election goroutine is running
	StateSuccess    State = 2 // a pod was formed
	StateFailure    State = 3 // no pod (failed, killed or skipped)
)

func (s State) String() string {
	switch s {
	case StateInit:
		return "init"
	case StateInProgress:
		return "in-progress"
	case StateSuccess:
		return "success"
	case StateFailure:
		return "failure"
	}
	return "invalid"
}

// User-visible states (POD_STATUS state, enum neuron_pod_e_state). The
// driver never reports NotStarted or Failed.
const (
	UserNotStarted  uint32 = 0
	UserInProgress  uint32 = 1
	UserUltraServer uint32 = 2
	UserFailed      uint32 = 3
	UserSingleNode  uint32 = 4
)

// Pod types (POD_INFO pod_type).
const (
	TypeNone   uint8 = 0
	TypeP2P    uint8 = 1 // UltraServer
	TypeSwitch uint8 = 2 // PDS
)

// Mode is an UltraServer operating mode (enum neuron_ultraserver_mode).
type Mode uint32

const (
	ModeUnset Mode = 0
	ModeX4    Mode = 1
	ModeX2H   Mode = 2 // two 2-node pods over the right (horizontal) links
	ModeX2V   Mode = 3 // two 2-node pods over the left (vertical) links
	ModeX1    Mode = 4
)

// POD_CTRL requests (enum neuron_pod_ctrl_req).
const (
	CtrlReqPod        uint32 = 0
	CtrlReqSingleNode uint32 = 1 // the legacy form of SET_MODE X1
	CtrlReqKill       uint32 = 2
	CtrlSetMode       uint32 = 3
)

// ENOTSUPP is the kernel-internal errno the driver answers for a mode the
// election result does not support.
const ENOTSUPP = syscall.Errno(524)

// Link masks: which link pairs an election uses.
const (
	LinkLeft  uint8 = 0x1 // vertical
	LinkRight uint8 = 0x2 // horizontal
	LinkBoth  uint8 = LinkLeft | LinkRight
)

// Ctl bits, the driver's userver_ctl module parameter.
const (
	CtlSkipElectionAtReset = 1 << 0
	CtlVerbose             = 1 << 2
	CtlFaultSecondaryLink  = 1 << 3 // every secondary's vetting fails
	CtlFaultPrimaryLink    = 1 << 4 // the primary stops after phase 1 (see electPrimary)
	CtlSkipNeighborCopy    = 1 << 5 // the primary stops after publishing (see electPrimary)
	CtlClearMiscRAM        = 1 << 6 // forget cached results when device 0 resets
	CtlFaultLeftLink       = 1 << 7 // reads over the left link fail
	CtlFaultRightLink      = 1 << 8 // reads over the right link fail
	CtlRightLinkOnly       = 1 << 9
	CtlLeftLinkOnly        = 1 << 10
)
