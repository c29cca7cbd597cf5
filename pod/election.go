package pod

import (
	"context"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/neuronfs/neuronfs/internal/lockrank"
)

// Kind is the platform an Election serves.
type Kind int

const (
	KindUltraServer Kind = iota // link election between servers
	KindPDS                     // no election: spoofed answers
)

// Driver defaults.
const (
	DefaultTimeout      = 600 * time.Second // userver_etimeout
	DefaultExtension    = 120 * time.Second // lame-duck deadline extension
	DefaultRetry        = 50 * time.Millisecond
	DefaultDevices      = 16
	DefaultPDSNodeCount = 2 // userver_pds_node_cnt
	DefaultPDSServerID  = 1 // userver_pds_server_id
)

// Config sets up one server's election.
type Config struct {
	Kind Kind
	// Devices per server (16 on real hardware): the election starts once
	// all of them have reset, and needs all secondaries to vet well.
	Devices int
	// Pod names the pod to join; Size (default 4) and Slot (-1: the first
	// free one; the zero value is slot 0) describe the cabling. Without a Coordinator the server has no
	// cables: every link read fails.
	Pod         string
	Size        int
	Slot        int
	Coordinator Coordinator
	// Ctl is the userver_ctl module parameter (Ctl* bits).
	Ctl uint32
	// Timeout bounds an election started by a reset (userver_etimeout);
	// Extension is the lame-duck extension; Retry the poll interval.
	Timeout, Extension, Retry time.Duration
	// PDS spoof settings (userver_pds_node_cnt, userver_pds_server_id; 0
	// means the default) and the server id the firmware reports.
	PDSNodeCount int
	PDSServerID  uint64
	ServerID     uint32
	// MarkedCores counts the host's range-marked cores (the REQ_POD gate).
	MarkedCores func() int
	Log         *logrus.Entry
}

// Election is one server's pod election state: the driver's pelect data
// plus its "neuron election" thread, here a goroutine.
type Election struct {
	cfg Config
	ram MiscRAM
	log *logrus.Entry

	stopCtx  context.Context // ends with Close
	stop     context.CancelFunc
	wake     chan struct{}
	finished chan struct{}

	mu         lockrank.Mutex[lockrank.PodElection]
	state      State
	mode       Mode
	lrDefault  uint8
	lr         uint8
	res        Result
	deadline   time.Time
	timeout    time.Duration
	runCtx     context.Context // one election; cancelled by a kill
	kill       context.CancelFunc
	registered []bool
	pdsDone    bool
	port       Port // guarded by mu; used only by the goroutine
}

// New returns the election of a server whose devices' misc RAM is ram and
// starts its goroutine (UltraServer only). Call Close when done.
func New(cfg Config, ram MiscRAM) *Election {
	if cfg.Devices <= 0 {
		cfg.Devices = DefaultDevices
	}
	if cfg.Size == 0 {
		cfg.Size = MaxNodes
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Extension <= 0 {
		cfg.Extension = DefaultExtension
	}
	if cfg.Retry <= 0 {
		cfg.Retry = DefaultRetry
	}
	if cfg.PDSNodeCount == 0 {
		cfg.PDSNodeCount = DefaultPDSNodeCount
	}
	if cfg.PDSServerID == 0 {
		cfg.PDSServerID = DefaultPDSServerID
	}
	if cfg.MarkedCores == nil {
		cfg.MarkedCores = func() int { return 0 }
	}
	if cfg.Log == nil {
		l := logrus.New()
		l.SetLevel(logrus.WarnLevel)
		cfg.Log = logrus.NewEntry(l)
	}
	e := &Election{
		cfg:        cfg,
		ram:        ram,
		log:        cfg.Log.WithField("pod", cfg.Pod),
		wake:       make(chan struct{}, 1),
		finished:   make(chan struct{}),
		lrDefault:  LinkBoth,
		lr:         LinkBoth,
		res:        Result{NodeID: -1},
		timeout:    cfg.Timeout,
		registered: make([]bool, cfg.Devices),
	}
	switch {
	case cfg.Ctl&CtlRightLinkOnly != 0:
		e.lrDefault = LinkRight
	case cfg.Ctl&CtlLeftLinkOnly != 0:
		e.lrDefault = LinkLeft
	}
	e.stopCtx, e.stop = context.WithCancel(context.Background())
	e.runCtx, e.kill = context.WithCancel(e.stopCtx)
	if cfg.Kind == KindUltraServer {
		go e.run()
	} else {
		close(e.finished)
	}
	return e
}

// Close stops the goroutine (an election under way fails) and leaves the
// pod. It returns once the goroutine has.
func (e *Election) Close() {
	e.stop()
	<-e.finished
	// A network port waits for its link handlers as it closes: no lock
	// may be held across that.
	e.mu.Lock()
	p := e.port
	e.port = nil
	e.mu.Unlock()
	if p != nil {
		p.Close()
	}
}

// busyLocked: the result is not settled yet.
func (e *Election) busyLocked() bool {
	return e.state == StateInit || e.state == StateInProgress
}

// State returns the internal state.
func (e *Election) State() State {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.state
}

// Result returns what the election decided (NodeID -1 until it has).
func (e *Election) Result() Result {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.res
}

// Wait returns once the state is settled (success or failure), ctx ends,
// or the election is closed; it reports the state then.
func (e *Election) Wait(ctx context.Context) State {
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		e.mu.Lock()
		st, busy := e.state, e.busyLocked()
		e.mu.Unlock()
		if !busy {
			return st
		}
		select {
		case <-ctx.Done():
			return st
		case <-e.stopCtx.Done():
			return st
		case <-t.C:
		}
	}
}

// initiateLocked starts an election that must end within timeout, unless
// one is running.
func (e *Election) initiateLocked(timeout time.Duration) {
	if e.state == StateInProgress {
		return
	}
	e.log.WithField("state", e.state).Info("initiating ultraserver election")
	e.runCtx, e.kill = context.WithCancel(e.stopCtx)
	e.deadline = time.Now().Add(timeout)
	e.state = StateInProgress
	e.res = Result{NodeID: -1}
	e.lr = e.lrDefault
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

func (e *Election) allResetLocked() bool {
	for _, ok := range e.registered {
		if !ok {
			return false
		}
	}
	return true
}

// OnReset is the driver's post-reset hook, called after every whole-device
// reset of device dev. Once all devices have reset, an election starts (on
// a PDS platform the spoofed data are set instead). Device 0 first reloads
// a successful result cached in its misc RAM.
func (e *Election) OnReset(dev int, ok bool) {
	if !ok || dev < 0 || dev >= e.cfg.Devices {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.registered[dev] = true
	if dev == 0 && e.cfg.Kind == KindUltraServer {
		if e.cfg.Ctl&CtlClearMiscRAM != 0 {
			for _, off := range []uint32{RegLeftSerialHi, RegLeftSerialLo, RegRightSerHi, RegRightSerLo} {
				e.ram.WriteMisc(0, off, 0)
			}
			e.ram.WriteMisc(0, RegStatus, PackStatus(MRInit, 0, 0, 0))
			e.setPodSerial(0, 0)
		}
		st := UnpackStatus(e.ram.ReadMisc(0, RegStatus))
		if st.Sts == MRSuccess {
			e.lr = st.LRMask
			e.res = Result{NodeID: int(st.NodeID), NodeCount: int(st.NodeCnt), LRMask: st.LRMask,
				PodSerial: uint64(e.ram.ReadMisc(0, RegPodSerialHi))<<32 | uint64(e.ram.ReadMisc(0, RegPodSerialLo))}
			e.state = StateSuccess
			return
		}
		if e.cfg.Ctl&CtlSkipElectionAtReset != 0 {
			e.state = StateFailure
			return
		}
	}
	if e.cfg.Kind == KindPDS {
		e.spoofPDSLocked()
		return
	}
	if e.state != StateInit || e.cfg.Ctl&CtlSkipElectionAtReset != 0 || !e.allResetLocked() {
		return
	}
	e.initiateLocked(e.timeout)
}

// NotifyUnmark is called after cores were unmarked, with the host-wide
// count of marked cores left: at zero the operating mode is forgotten.
func (e *Election) NotifyUnmark(marked int) {
	if marked != 0 {
		return
	}
	e.mu.Lock()
	e.mode = ModeUnset
	e.mu.Unlock()
}

// statusLocked is what POD_STATUS and POD_CTRL report.
func (e *Election) statusLocked() (state uint32, nodeID int8, errno syscall.Errno) {
	switch e.state {
	case StateInit, StateInProgress:
		state, errno = UserInProgress, syscall.EBUSY
	case StateSuccess:
		state = UserUltraServer
		if e.mode == ModeX1 {
			state = UserSingleNode
		}
	case StateFailure:
		state = UserSingleNode
	}
	return state, int8(e.res.ModalNodeID(e.mode)), errno
}

// Status answers POD_STATUS: the user-visible state, the node id in the
// current mode, and EBUSY while the result is not settled.
func (e *Election) Status() (state uint32, nodeID int8, errno syscall.Errno) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.statusLocked()
}

// Info is what POD_INFO and POD_STATUS_V2 report beyond the state.
type Info struct {
	Type           uint8
	Size           uint8
	Serial         uint64 // the pod id's first 8 bytes, little-endian
	Mode           Mode
	ModesSupported uint32
}

// Info answers POD_INFO.
func (e *Election) Info() Info {
	e.mu.Lock()
	defer e.mu.Unlock()
	t := TypeP2P
	if e.cfg.Kind == KindPDS {
		t = TypeSwitch
	}
	return Info{
		Type:           t,
		Size:           uint8(e.res.ModalNodeCount(e.mode)),
		Serial:         e.res.ModalSerial(e.mode),
		Mode:           e.mode,
		ModesSupported: e.res.ModesSupported(),
	}
}

// Ctrl answers POD_CTRL: start an election (REQ_POD, only when no core is
// marked and every device has reset: else EAGAIN), kill one, or set the
// operating mode (EBUSY while electing, EEXIST over another mode, ENOTSUPP
// for a mode the result does not allow). The state goes back in any case.
func (e *Election) Ctrl(ctrl uint32, mode Mode, timeoutSec uint32) (state uint32, errno syscall.Errno) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if ctrl == CtrlReqSingleNode {
		ctrl, mode = CtrlSetMode, ModeX1
	}
	switch ctrl {
	case CtrlReqKill:
		switch e.state {
		case StateInProgress:
			e.kill()
		case StateInit:
			e.state = StateFailure
		}
	case CtrlSetMode:
		switch {
		case e.busyLocked():
			errno = syscall.EBUSY
		case e.mode != ModeUnset && mode != e.mode:
			errno = syscall.EEXIST
		case !e.res.ModeSupported(mode):
			errno = ENOTSUPP
		default:
			e.mode = mode
		}
	case CtrlReqPod:
		if e.cfg.Kind == KindPDS {
			break
		}
		// The marked-core count is the host's; its lock is taken inside.
		if e.cfg.MarkedCores() == 0 && e.allResetLocked() {
			e.initiateLocked(time.Duration(timeoutSec) * time.Second)
		} else {
			errno = syscall.EAGAIN
		}
	default:
		errno = syscall.EINVAL
	}
	state, _, _ = e.statusLocked()
	return state, errno
}
