package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/neuronfs/neuronfs/dhal"
	"github.com/neuronfs/neuronfs/pod"
)

// podFlags configure UltraServer pod election and the PDS spoof.
type podFlags struct {
	name       string
	nodeSerial string
	size       int
	slot       int
	timeout    time.Duration
	linkFault  string
	ctl        uint
	pdsNodes   int
	pdsServer  uint64
}

// envLinkFault names the environment knob for --pod-link-fault.
const envLinkFault = "NEURONFS_POD_LINK_FAULT"

func (p *podFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&p.name, "pod", "", "join the named UltraServer pod (trn2u.48xlarge): daemons on this host with the same name elect together")
	fs.StringVar(&p.nodeSerial, "node-serial", "", "serial number of device 0, the one pod election compares (decimal or 0x hex; required with --pod)")
	fs.IntVar(&p.size, "pod-size", 4, "nodes in the pod: 2 or 4")
	fs.IntVar(&p.slot, "pod-slot", -1, "position in the pod's cabling, 0..size-1 (default: the first free one)")
	fs.DurationVar(&p.timeout, "pod-timeout", pod.DefaultTimeout, "deadline of the election started at load (the driver's userver_etimeout)")
	fs.StringVar(&p.linkFault, "pod-link-fault", os.Getenv(envLinkFault), "break this server's link reads: left, right or both (also $"+envLinkFault+")")
	fs.UintVar(&p.ctl, "userver-ctl", 0, "the driver's userver_ctl bits (skip election at load, faults, link choice)")
	fs.IntVar(&p.pdsNodes, "pds-node-count", pod.DefaultPDSNodeCount, "PDS hosts: pod size reported (the driver's userver_pds_node_cnt: 2 or 4)")
	fs.Uint64Var(&p.pdsServer, "pds-server-id", pod.DefaultPDSServerID, "PDS hosts: pod id reported (the driver's userver_pds_server_id)")
}

func (p *podFlags) args() []string {
	return []string{
		"--pod=" + p.name, "--node-serial=" + p.nodeSerial, fmt.Sprintf("--pod-size=%d", p.size), fmt.Sprintf("--pod-slot=%d", p.slot),
		"--pod-timeout=" + p.timeout.String(), "--pod-link-fault=" + p.linkFault, fmt.Sprintf("--userver-ctl=%d", p.ctl),
		fmt.Sprintf("--pds-node-count=%d", p.pdsNodes), fmt.Sprintf("--pds-server-id=%d", p.pdsServer),
	}
}

// config checks the flags against the instance and returns the device
// configuration's pod part and node serial. A pod gets a Unix-socket
// coordinator, which the caller closes.
func (p *podFlags) config(instance string, log *logrus.Entry) (pod.Config, uint64, *pod.Socket, error) {
	var serial uint64
	if p.nodeSerial != "" {
		v, err := strconv.ParseUint(p.nodeSerial, 0, 64)
		if err != nil || v == 0 {
			return pod.Config{}, 0, nil, fmt.Errorf("--node-serial %q: want a non-zero 64-bit number", p.nodeSerial)
		}
		serial = v
	}
	ctl := uint32(p.ctl)
	switch strings.ToLower(p.linkFault) {
	case "", "none":
	case "left":
		ctl |= pod.CtlFaultLeftLink
	case "right":
		ctl |= pod.CtlFaultRightLink
	case "both":
		ctl |= pod.CtlFaultLeftLink | pod.CtlFaultRightLink
	default:
		return pod.Config{}, 0, nil, fmt.Errorf("--pod-link-fault %q: want left, right, both or none", p.linkFault)
	}
	if p.pdsNodes != 2 && p.pdsNodes != 4 {
		return pod.Config{}, 0, nil, fmt.Errorf("--pds-node-count %d: want 2 or 4", p.pdsNodes)
	}
	cfg := pod.Config{Size: p.size, Slot: p.slot, Ctl: ctl, Timeout: p.timeout, PDSNodeCount: p.pdsNodes, PDSServerID: p.pdsServer}
	if p.name == "" {
		return cfg, serial, nil, nil
	}
	inst, err := dhal.LookupInstance(instance)
	if err != nil {
		return cfg, 0, nil, err
	}
	if inst.Platform != dhal.PlatformUltraServer {
		return cfg, 0, nil, fmt.Errorf("--pod needs an UltraServer instance (such as trn2u.48xlarge), not %s", instance)
	}
	if serial == 0 {
		return cfg, 0, nil, fmt.Errorf("--pod needs --node-serial: the election orders servers by it")
	}
	if p.size != 2 && p.size != 4 {
		return cfg, 0, nil, fmt.Errorf("--pod-size %d: want 2 or 4", p.size)
	}
	if p.slot < -1 || p.slot >= p.size {
		return cfg, 0, nil, fmt.Errorf("--pod-slot %d: want 0..%d", p.slot, p.size-1)
	}
	sock := pod.NewSocket(log)
	cfg.Pod, cfg.Coordinator = p.name, sock
	return cfg, serial, sock, nil
}
