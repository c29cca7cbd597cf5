package main

import (
	"flag"
	"fmt"
	"hash/fnv"
	"io"
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
	// A pod across machines (podnet.go).
	peers       string
	secretFile  string
	listen      string
	linkTimeout time.Duration
	retry       time.Duration
	poll        time.Duration
}

// envLinkFault names the environment knob for --pod-link-fault.
const envLinkFault = "NEURONFS_POD_LINK_FAULT"

func (p *podFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&p.name, "pod", "", "join the named UltraServer pod (trn2u.48xlarge): daemons on this host with the same name elect together (with --pod-peers: the daemons listed there)")
	fs.StringVar(&p.nodeSerial, "node-serial", "", "serial number of device 0, the one pod election compares (decimal, 0x hex, or hash:TEXT for a number made from TEXT such as the node's name; required with --pod)")
	fs.IntVar(&p.size, "pod-size", 4, "nodes in the pod: 2 or 4")
	fs.IntVar(&p.slot, "pod-slot", -1, "position in the pod's cabling, 0..size-1 (default: the first free one; with --pod-peers, this machine's entry)")
	fs.DurationVar(&p.timeout, "pod-timeout", pod.DefaultTimeout, "deadline of the election started at load (the driver's userver_etimeout)")
	fs.StringVar(&p.linkFault, "pod-link-fault", os.Getenv(envLinkFault), "break this server's link reads: left, right or both (also $"+envLinkFault+")")
	fs.UintVar(&p.ctl, "userver-ctl", 0, "the driver's userver_ctl bits (skip election at load, faults, link choice)")
	fs.IntVar(&p.pdsNodes, "pds-node-count", pod.DefaultPDSNodeCount, "PDS hosts: pod size reported (the driver's userver_pds_node_cnt: 2 or 4)")
	fs.Uint64Var(&p.pdsServer, "pds-server-id", pod.DefaultPDSServerID, "PDS hosts: pod id reported (the driver's userver_pds_server_id)")
	p.registerNet(fs)
}

// parseSerial reads --node-serial: a number, or hash:TEXT, which gives
// every node of a DaemonSet its own serial from its name.
func parseSerial(s string) (uint64, error) {
	if text, ok := strings.CutPrefix(s, "hash:"); ok && text != "" {
		h := fnv.New64a()
		h.Write([]byte(text))
		if v := h.Sum64(); v != 0 {
			return v, nil
		}
		return 1, nil
	}
	v, err := strconv.ParseUint(s, 0, 64)
	if err != nil || v == 0 {
		return 0, fmt.Errorf("--node-serial %q: want a non-zero 64-bit number or hash:TEXT", s)
	}
	return v, nil
}

// config checks the flags against the instance and returns the device
// configuration's pod part and node serial. A pod on one host gets a
// Unix-socket coordinator, which the caller closes; a pod across machines
// (--pod-peers) a network one, which needs no closing.
func (p *podFlags) config(instance string, log *logrus.Entry) (pod.Config, uint64, io.Closer, error) {
	cfg, serial, err := p.check(instance)
	if err != nil || p.name == "" {
		return cfg, serial, nil, err
	}
	if p.peers != "" {
		c, err := p.netCoordinator(log)
		if err != nil {
			return cfg, 0, nil, err
		}
		cfg.Coordinator = c
		return cfg, serial, nil, nil
	}
	sock := pod.NewSocket(log)
	cfg.Coordinator = sock
	return cfg, serial, sock, nil
}

// check reads the pod flags against the instance without starting
// anything: the configuration without its coordinator, and the serial.
func (p *podFlags) check(instance string) (pod.Config, uint64, error) {
	var serial uint64
	if p.nodeSerial != "" {
		v, err := parseSerial(p.nodeSerial)
		if err != nil {
			return pod.Config{}, 0, err
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
		return pod.Config{}, 0, fmt.Errorf("--pod-link-fault %q: want left, right, both or none", p.linkFault)
	}
	if p.pdsNodes != 2 && p.pdsNodes != 4 {
		return pod.Config{}, 0, fmt.Errorf("--pds-node-count %d: want 2 or 4", p.pdsNodes)
	}
	cfg := pod.Config{Size: p.size, Slot: p.slot, Ctl: ctl, Timeout: p.timeout, Extension: p.retry, Retry: p.poll, PDSNodeCount: p.pdsNodes, PDSServerID: p.pdsServer}
	if p.name == "" {
		if p.peers != "" {
			return cfg, 0, fmt.Errorf("--pod-peers needs --pod")
		}
		return cfg, serial, nil
	}
	inst, err := dhal.LookupInstance(instance)
	if err != nil {
		return cfg, 0, err
	}
	if inst.Platform != dhal.PlatformUltraServer {
		return cfg, 0, fmt.Errorf("--pod needs an UltraServer instance (such as trn2u.48xlarge), not %s", instance)
	}
	if serial == 0 {
		return cfg, 0, fmt.Errorf("--pod needs --node-serial: the election orders servers by it")
	}
	if p.size != 2 && p.size != 4 {
		return cfg, 0, fmt.Errorf("--pod-size %d: want 2 or 4", p.size)
	}
	if p.slot < -1 || p.slot >= p.size {
		return cfg, 0, fmt.Errorf("--pod-slot %d: want 0..%d", p.slot, p.size-1)
	}
	cfg.Pod = p.name
	return cfg, serial, nil
}
