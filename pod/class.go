package pod

import (
	"fmt"
	"strings"
)

// The /sys/class/neuron_device attributes an UltraServer or PDS host
// shows. Each is computed as the driver computes it at read time.

// SysfsMode is the mode a class attribute for a pod of nodes reports:
// X4 for 4; for 2 the horizontal split if the result allows it, else the
// vertical one, else none (X1).
func (r Result) SysfsMode(nodes int) Mode {
	switch {
	case nodes == 4:
		return ModeX4
	case r.ModeSupported(ModeX2H):
		return ModeX2H
	case r.ModeSupported(ModeX2V):
		return ModeX2V
	}
	return ModeX1
}

func (e *Election) sysfsModeLocked(nodes int) Mode { return e.res.SysfsMode(nodes) }

// ClassNodeID renders node_id_<nodes> (nodes is 2 or 4); nodes 0 is the
// node_id of drivers before UltraServer modes (2.22): the elected id.
func (e *Election) ClassNodeID(nodes int) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.busyLocked() {
		return "busy\n"
	}
	return fmt.Sprintf("%d\n", e.res.ModalNodeID(e.classModeLocked(nodes)))
}

// ClassServerID renders server_id_<nodes>: the pod serial in that mode
// (nodes 0: server_id of 2.22, the elected pod serial).
func (e *Election) ClassServerID(nodes int) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.busyLocked() {
		return "0000000000000000\n"
	}
	return fmt.Sprintf("%016x\n", e.res.ModalSerial(e.classModeLocked(nodes)))
}

func (e *Election) classModeLocked(nodes int) Mode {
	if nodes == 0 {
		return ModeUnset
	}
	return e.sysfsModeLocked(nodes)
}

// ClassModes renders ultraserver_mode: the supported modes, comma-separated.
func (e *Election) ClassModes() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.busyLocked() {
		return "busy\n"
	}
	var modes []string
	for m := ModeX4; m <= ModeX1; m++ {
		if e.res.ModeSupported(m) {
			modes = append(modes, fmt.Sprint(int(m)))
		}
	}
	return strings.Join(modes, ",") + "\n"
}
