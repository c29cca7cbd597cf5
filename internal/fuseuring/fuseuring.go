//go:build linux

// Package fuseuring serves a FUSE connection over io_uring (Linux ≥ 6.14,
// FUSE_OVER_IO_URING): one ring per possible CPU, each served by a
// goroutine locked to its own OS thread and pinned to that CPU. The kernel
// queues a request on the ring of the CPU its caller runs on, so the
// answer is computed and delivered on that CPU, with one io_uring_enter
// per request and no cross-CPU wake-up.
//
// The package hosts the ring beside go-fuse rather than inside it: go-fuse's
// fuse.Server still mounts, answers INIT, registers backing files and
// writes notifications; requests taken from a ring, and the few still read
// from /dev/fuse (INTERRUPT, FORGET, anything sent before the ring was
// ready), go through one fuse.ProtocolServer built on the same
// RawFileSystem, so an interrupt read from /dev/fuse finds a request being
// served on a ring. See docs/fuse-uring.md for why.
//
// Facts this code relies on (measured on Linux 6.18; docs/fuse-uring.md):
//   - the thread that submits an entry's SQE is the one the kernel later
//     delivers that entry's next request to, so only the queue's own thread
//     ever submits for it; a request that may block is served by a worker
//     goroutine whose reply the queue thread commits;
//   - the ring becomes ready only once every possible CPU has a registered
//     entry; until then requests still go through /dev/fuse, as long as
//     the INIT reply did not carry FUSE_OVER_IO_URING (this package never
//     asks go-fuse to send it), so a failed setup never blocks a caller;
//   - the reply is written over the request's payload buffer, so in-data is
//     copied out before the handler runs.
package fuseuring

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/internal/lockrank"
)

// FUSE ring uapi (include/uapi/linux/fuse.h, 7.42+).
const (
	cmdRegister       = 1 // FUSE_IO_URING_CMD_REGISTER
	cmdCommitAndFetch = 2 // FUSE_IO_URING_CMD_COMMIT_AND_FETCH

	// struct fuse_uring_req_header: in_out[128], op_in[128], then
	// struct fuse_uring_ent_in_out {flags, commit_id u64; payload_sz,
	// padding u32; reserved u64}.
	hdrInOut     = 0
	hdrOpIn      = 128
	hdrOpInSize  = 128
	hdrCommitID  = 264
	hdrPayloadSz = 272
	hdrSize      = 288

	// struct fuse_uring_cmd_req in the SQE's cmd area: flags u64,
	// commit_id u64, qid u16.
	cmdReqCommitID = 8
	cmdReqQid      = 16

	inHeaderSize  = 40 // struct fuse_in_header
	outHeaderSize = 16 // struct fuse_out_header

	opWrite = 16 // FUSE_WRITE: its in-data is never overlaid by out-data

	minReadBuffer = 8192 // FUSE_MIN_READ_BUFFER

	// Per entry: one page holding the header and the iovec pair REGISTER
	// points at, then the payload.
	entHdrPage = 4096
	entIovOff  = 2048
	efdBufOff  = 3072 // in entry 0's header page: the eventfd read's 8 bytes

	efdTag = ^uint64(0) // user_data of the eventfd read
)

// Config describes the connection to serve.
type Config struct {
	// FD is the /dev/fuse descriptor; INIT must have been answered on it.
	// The Transport closes it when the connection has ended.
	FD int
	// Server answers the requests. It must have seen the connection's INIT
	// (see ReplayInit).
	Server *fuse.ProtocolServer
	// MaxWrite and MaxPages are what INIT negotiated: the kernel refuses
	// payload buffers smaller than max(8 KiB, MaxWrite, MaxPages pages).
	MaxWrite, MaxPages int
	// Depth is the number of entries per queue: the number of requests
	// from one CPU that can be in service at once. A request that may
	// block holds its entry until it is answered, so Depth also bounds how
	// many of those one CPU can have before its later callers wait.
	Depth int
	// Offload tells, from the opcode and the per-opcode input struct
	// (fuse_ioctl_in for FUSE_IOCTL), whether a request may wait for long
	// and must leave the queue thread.
	Offload func(opcode uint32, opIn []byte) bool
	Log     *logrus.Entry
	// failQueue, when not 0, makes queue failQueue-1's setup fail (tests).
	failQueue int
}

// Transport is a running io_uring transport.
type Transport struct {
	cfg     Config
	payload int
	queues  []*queue
	qdone   sync.WaitGroup // queue goroutines
	devDone chan struct{}  // closed when the /dev/fuse loop has ended
	closeFD sync.Once
}

// PossibleCPUs returns the number of possible CPUs, the kernel's count of
// queues (num_possible_cpus), from the sysfs mask.
func PossibleCPUs() (int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/possible")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, part := range strings.Split(strings.TrimSpace(string(b)), ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 0, fmt.Errorf("cpu possible mask %q: %w", b, err)
		}
		z := a
		if isRange {
			if z, err = strconv.Atoi(hi); err != nil || z < a {
				return 0, fmt.Errorf("cpu possible mask %q", b)
			}
		}
		n += z - a + 1
	}
	if n == 0 {
		return 0, fmt.Errorf("cpu possible mask %q is empty", b)
	}
	return n, nil
}

// ReplayInit feeds ps the INIT message that fuse.Server already answered
// (Server.KernelSettings holds it whole, header included), so that ps
// parses later requests with the negotiated protocol version and flags.
// Its answer is discarded: the kernel has had one.
func ReplayInit(ps *fuse.ProtocolServer, init *fuse.InitIn) error {
	in := unsafe.Slice((*byte)(unsafe.Pointer(init)), unsafe.Sizeof(*init))
	in = append([]byte(nil), in...)
	if l := int(init.Length); l >= inHeaderSize && l < len(in) {
		in = in[:l]
	}
	out := make([]byte, 4096)
	if _, st := ps.HandleRequest([][]byte{in}, [][]byte{out}); !st.Ok() {
		return fmt.Errorf("replaying INIT: %v", st)
	}
	if st := (*fuse.OutHeader)(unsafe.Pointer(&out[0])).Status; st != 0 {
		return fmt.Errorf("replaying INIT: status %d", st)
	}
	return nil
}

// Attach serves server's connection over io_uring: server must come from
// fuse.NewServer (INIT answered) without Serve having been called, and raw
// and mopts must be what it was made with. Its cfg.Server is filled in. On
// success the caller runs ServeDev instead of server.Serve; on error it
// runs server.Serve (see Start), and the returned Transport, if any, holds
// queues that end with the connection.
func Attach(server *fuse.Server, raw fuse.RawFileSystem, mopts *fuse.MountOptions, cfg Config) (*Transport, error) {
	ks := server.KernelSettings()
	if ks.Flags64()&fuse.CAP_OVER_IO_URING == 0 {
		return nil, errors.New("the kernel did not offer FUSE_OVER_IO_URING at INIT (enable_uring was N, or the kernel is older than 6.14)")
	}
	cfg.Server = fuse.NewProtocolServer(raw, mopts)
	if err := ReplayInit(cfg.Server, ks); err != nil {
		return nil, err
	}
	// server owns cfg.FD (an *os.File that closes it when collected), so
	// the transport works on, and closes, its own duplicate.
	fd, err := unix.FcntlInt(uintptr(cfg.FD), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("dup /dev/fuse: %w", err)
	}
	cfg.FD = fd
	t, err := Start(cfg)
	if err != nil && t != nil {
		// The queues that registered hold the descriptor; the last of
		// them to end closes it.
		go func() { t.qdone.Wait(); unix.Close(fd) }()
	} else if err != nil {
		unix.Close(fd)
	}
	return t, err
}

// Start sets up one queue per possible CPU and registers every entry. It
// returns once each queue has either registered all its entries or
// failed. On error, no ring is ready (some CPU has no entry), so the kernel
// keeps sending requests through /dev/fuse and the caller must serve them
// there (the classic loop); the queues that did register end when the
// connection does. On success, the caller must run ServeDev.
func Start(cfg Config) (*Transport, error) {
	if cfg.Depth < 2 {
		// One entry in service on a worker must leave another for the
		// CPU's next caller.
		cfg.Depth = 2
	}
	if cfg.Log == nil {
		cfg.Log = logrus.NewEntry(logrus.StandardLogger())
	}
	ncpu, err := PossibleCPUs()
	if err != nil {
		return nil, err
	}
	page := os.Getpagesize()
	payload := max(minReadBuffer, cfg.MaxWrite, cfg.MaxPages*page)
	payload = (payload + page - 1) &^ (page - 1)
	t := &Transport{cfg: cfg, payload: payload, devDone: make(chan struct{})}
	results := make(chan error, ncpu)
	for qid := 0; qid < ncpu; qid++ {
		q := &queue{t: t, qid: qid, efd: -1}
		t.queues = append(t.queues, q)
		t.qdone.Add(1)
		go q.run(results)
	}
	var errs []error
	for range ncpu {
		if err := <-results; err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return t, errors.Join(errs...)
	}
	return t, nil
}

// SetFailQueue makes queue qid fail its setup (for tests of the fallback).
func (c *Config) SetFailQueue(qid int) { c.failQueue = qid + 1 }

// ServeDev reads /dev/fuse until the connection ends: INTERRUPT and
// FORGET always come this way, and so does any request queued before the
// ring was ready. Each request is served on its own goroutine, since it may
// block. Then it waits for the queues to end and closes the descriptor.
func (t *Transport) ServeDev() {
	defer close(t.devDone)
	buf := make([]byte, t.payload+entHdrPage)
	for {
		lockrank.AssertUnlocked("fuseuring: read /dev/fuse")
		n, err := unix.Read(t.cfg.FD, buf)
		if err == unix.EINTR || err == unix.ENOENT || err == unix.EAGAIN {
			// ENOENT: the request was interrupted before it was read.
			continue
		}
		if err != nil {
			if err != unix.ENODEV {
				t.cfg.Log.WithError(err).Warn("fuseuring: reading /dev/fuse")
			}
			break
		}
		req := append([]byte(nil), buf[:n]...)
		go t.serveDevRequest(req)
	}
	t.qdone.Wait()
	t.closeFD.Do(func() { unix.Close(t.cfg.FD) })
}

var devOutPool sync.Pool

func (t *Transport) serveDevRequest(req []byte) {
	out, _ := devOutPool.Get().([]byte)
	if len(out) < t.payload+entHdrPage {
		out = make([]byte, t.payload+entHdrPage)
	}
	defer devOutPool.Put(out)
	n, st := t.cfg.Server.HandleRequest([][]byte{req}, [][]byte{out})
	if !st.Ok() && n == 0 && len(req) >= inHeaderSize {
		n = errorReply(out, req[8:16], st)
	}
	if n > 0 {
		if _, err := unix.Write(t.cfg.FD, out[:n]); err != nil && err != unix.ENOENT {
			t.cfg.Log.WithError(err).Debug("fuseuring: writing reply to /dev/fuse")
		}
	}
}

// errorReply writes a bare out header with status st for the request
// whose unique is the 8 bytes of unique, and returns its length.
func errorReply(out []byte, unique []byte, st fuse.Status) int {
	clear(out[:outHeaderSize])
	put32(out, 0, outHeaderSize)
	if st.Ok() {
		st = fuse.EIO
	}
	put32(out, 4, uint32(-int32(st)))
	copy(out[8:16], unique)
	return outHeaderSize
}

// Wait returns once the connection has ended and every queue has stopped.
func (t *Transport) Wait() {
	<-t.devDone
}

// Queues returns the number of queues (the possible CPUs).
func (t *Transport) Queues() int { return len(t.queues) }

// Served returns how many requests each queue has taken from its ring.
func (t *Transport) Served() []uint64 {
	out := make([]uint64, len(t.queues))
	for i, q := range t.queues {
		out[i] = q.served.Load()
	}
	return out
}

// WaitQueues returns once every queue has stopped (after a failed Start,
// when the connection ends).
func (t *Transport) WaitQueues() { t.qdone.Wait() }

// queue is one CPU's ring and its entries.
type queue struct {
	t    *Transport
	qid  int
	r    *ring
	mem  []byte // the entries' headers and payloads
	ents []*entry
	efd  int // a worker's reply is ready
	live int // entries the kernel or a worker still holds

	doneMu  lockrank.Mutex[lockrank.Transport]
	done    []*entry // answered by workers, to commit
	asleep  bool     // the thread sleeps in the ring: a reply must wake it
	workers sync.WaitGroup
	batch   []cqe
	served  atomic.Uint64 // requests taken from the ring (tests, diagnostics)
}

// entry is one registered pair of buffers: a header and a payload.
type entry struct {
	idx     int
	hdr     []byte
	payload []byte
	scratch []byte // the in-data, copied out of the payload the reply overwrites
	// The iovecs handed to HandleRequest, kept here so that serving a
	// request allocates none.
	in  [3][]byte
	out [2][]byte
}

func (q *queue) run(results chan<- error) {
	defer q.t.qdone.Done()
	// Never unlocked: the entries belong to this thread for their life, and
	// a locked goroutine's exit ends its thread with them.
	runtime.LockOSThread()
	log := q.t.cfg.Log.WithField("qid", q.qid)
	err := q.setup()
	if err != nil {
		q.release()
		results <- fmt.Errorf("queue %d: %w", q.qid, err)
		return
	}
	// Any REGISTER the kernel refused has its completion posted by now:
	// URING_CMD is issued inline by io_uring_enter.
	var regErr error
	q.r.reap(func(c cqe) {
		if c.userData != efdTag && c.res < 0 && regErr == nil {
			regErr = fmt.Errorf("queue %d: register: %w", q.qid, syscall.Errno(-c.res))
		}
		q.batch = append(q.batch, c)
	})
	results <- regErr
	q.loop(log)
	q.workers.Wait()
	q.release()
	log.Debug("fuseuring: queue stopped")
}

func (q *queue) setup() error {
	if q.t.cfg.failQueue == q.qid+1 {
		return errors.New("injected failure")
	}
	var set unix.CPUSet
	set.Set(q.qid)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		// A possible CPU that is offline: nobody runs there to send on
		// this queue, but the kernel still needs it registered.
		q.t.cfg.Log.WithError(err).WithField("qid", q.qid).Debug("fuseuring: cannot pin queue thread")
	}
	depth := q.t.cfg.Depth
	r, err := newRing(uint32(2*depth + 2))
	if err != nil {
		return err
	}
	q.r = r
	stride := entHdrPage + q.t.payload
	// The kernel writes into these buffers from this thread's context, long
	// after REGISTER: they must be memory the Go heap never moves or frees.
	mem, err := unix.Mmap(-1, 0, depth*stride, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return fmt.Errorf("mmap buffers: %w", err)
	}
	q.mem = mem
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("eventfd: %w", err)
	}
	q.efd = efd
	for i := range depth {
		base := i * stride
		e := &entry{idx: i, hdr: mem[base : base+hdrSize], payload: mem[base+entHdrPage : base+stride]}
		iov := mem[base+entIovOff : base+entIovOff+32]
		put64(iov, 0, uint64(uintptr(unsafe.Pointer(&e.hdr[0]))))
		put64(iov, 8, hdrSize)
		put64(iov, 16, uint64(uintptr(unsafe.Pointer(&e.payload[0]))))
		put64(iov, 24, uint64(q.t.payload))
		s := q.r.sqe()
		put8(s, sqeOpcode, opURingCmd)
		put32(s, sqeFd, uint32(q.t.cfg.FD))
		put32(s, sqeOff, cmdRegister)
		put64(s, sqeAddr, uint64(uintptr(unsafe.Pointer(&iov[0]))))
		put32(s, sqeLen, 2)
		put64(s, sqeUserData, uint64(i))
		put16(s, sqeCmd+cmdReqQid, uint16(q.qid))
		q.ents = append(q.ents, e)
		q.live++
	}
	q.armEventfd()
	return q.r.enter(false)
}

func (q *queue) armEventfd() {
	s := q.r.sqe()
	put8(s, sqeOpcode, opRead)
	put32(s, sqeFd, uint32(q.efd))
	put64(s, sqeAddr, uint64(uintptr(unsafe.Pointer(&q.mem[efdBufOff]))))
	put32(s, sqeLen, 8)
	put64(s, sqeUserData, efdTag)
}

func (q *queue) release() {
	if q.r != nil {
		q.r.close()
	}
	if q.efd >= 0 {
		unix.Close(q.efd)
	}
	if q.mem != nil {
		unix.Munmap(q.mem)
	}
}

// loop serves the queue until the kernel has given back every entry.
func (q *queue) loop(log *logrus.Entry) {
	for {
		batch := q.batch
		q.batch = q.batch[:0:0]
		started := false
		for _, c := range batch {
			started = q.complete(c, log) || started
		}
		if q.live == 0 {
			return
		}
		if started {
			q.yieldToWorkers(log)
		}
		q.commitDone()
		lockrank.AssertUnlocked("fuseuring: queue wait")
		err := q.r.enter(true)
		q.doneMu.Lock()
		q.asleep = false
		q.doneMu.Unlock()
		if err != nil {
			// Not expected; without the ring nothing more can be served
			// here, and the connection's end is the only way out.
			log.WithError(err).Error("fuseuring: queue stopped")
			return
		}
		q.r.reap(func(c cqe) { q.batch = append(q.batch, c) })
	}
}

// yieldToWorkers lets the workers just started run now. A goroutine
// started here waits on this thread's P, and a blocking io_uring_enter
// keeps the P: nothing else runs the worker until the runtime takes the P
// back (sysmon, tens of µs later), which was most of an offloaded request's
// time when the other Ps were busy or in syscalls too. So the replies
// ready are submitted first, then the P is given away (a locked thread
// hands it to another thread at once); this thread gets one back once the
// worker blocks or ends, before it sleeps in the ring.
func (q *queue) yieldToWorkers(log *logrus.Entry) {
	if err := q.r.enter(false); err != nil {
		log.WithError(err).Debug("fuseuring: submitting before a yield")
	}
	runtime.Gosched()
}

// complete handles one completion, and reports whether it started a
// worker.
func (q *queue) complete(c cqe, log *logrus.Entry) bool {
	if c.userData == efdTag {
		q.doneMu.Lock()
		done := q.done
		q.done = nil
		q.doneMu.Unlock()
		for _, e := range done {
			q.commit(e)
		}
		if c.res < 0 && c.res != -int32(unix.EINTR) && c.res != -int32(unix.ECANCELED) {
			log.WithField("errno", syscall.Errno(-c.res)).Warn("fuseuring: eventfd read failed")
		}
		if q.live > 0 {
			q.armEventfd()
		}
		return false
	}
	if c.userData >= uint64(len(q.ents)) {
		return false
	}
	e := q.ents[c.userData]
	if c.res < 0 {
		// The entry is gone: the connection ended (ENOTCONN, or
		// ECONNABORTED for a commit after the abort), or the kernel
		// refused it.
		q.live--
		if c.res != -int32(unix.ENOTCONN) && c.res != -int32(unix.ECONNABORTED) {
			log.WithField("errno", syscall.Errno(-c.res)).WithField("entry", e.idx).Debug("fuseuring: entry ended")
		}
		return false
	}
	q.served.Add(1)
	opcode := le32(e.hdr[hdrInOut+4:])
	if q.t.cfg.Offload != nil && q.t.cfg.Offload(opcode, e.opIn()) {
		q.workers.Add(1)
		go q.work(e)
		return true
	}
	q.serve(e)
	q.commit(e)
	return false
}

// commitDone commits the replies workers left, until there are none, and
// then marks the thread asleep: from then on a worker's reply must wake it
// through the eventfd. While the thread is awake, replies need no wake-up
// (a worker often finishes while the thread yields its P to it).
func (q *queue) commitDone() {
	for {
		q.doneMu.Lock()
		done := q.done
		q.done = nil
		q.asleep = len(done) == 0
		q.doneMu.Unlock()
		if len(done) == 0 {
			return
		}
		for _, e := range done {
			q.commit(e)
		}
	}
}

// work serves e off the queue thread and hands it back for the commit.
func (q *queue) work(e *entry) {
	defer q.workers.Done()
	q.serve(e)
	q.doneMu.Lock()
	q.done = append(q.done, e)
	wake := q.asleep
	q.asleep = false // one write wakes it for all
	q.doneMu.Unlock()
	if !wake {
		return
	}
	var one [8]byte
	one[0] = 1
	if _, err := unix.Write(q.efd, one[:]); err != nil {
		q.t.cfg.Log.WithError(err).Error("fuseuring: waking queue thread")
	}
}

// opIn returns the request's per-opcode input struct. Its size is not
// sent, but the in header's length is the sum of the header, it and the
// payload (measured for every opcode seen).
func (e *entry) opIn() []byte {
	n := int(le32(e.hdr[hdrInOut:])) - inHeaderSize - int(le32(e.hdr[hdrPayloadSz:]))
	n = min(max(n, 0), hdrOpInSize)
	return e.hdr[hdrOpIn : hdrOpIn+n]
}

// serve answers the request in e, leaving the reply in e's buffers.
func (e *entry) serveWith(ps *fuse.ProtocolServer) {
	psz := min(int(le32(e.hdr[hdrPayloadSz:])), len(e.payload))
	in := e.payload[:psz]
	if psz > 0 && le32(e.hdr[hdrInOut+4:]) != opWrite {
		// The out-data is written over the payload buffer the in-data
		// sits in (an ioctl's output buffer would overlap its input).
		if cap(e.scratch) < psz {
			e.scratch = make([]byte, psz)
		}
		e.scratch = e.scratch[:psz]
		copy(e.scratch, in)
		in = e.scratch
	}
	var unique [8]byte
	copy(unique[:], e.hdr[hdrInOut+8:hdrInOut+16])
	e.in = [3][]byte{e.hdr[hdrInOut : hdrInOut+inHeaderSize], e.opIn(), in}
	e.out = [2][]byte{e.hdr[hdrInOut : hdrInOut+outHeaderSize], e.payload}
	n, st := ps.HandleRequest(e.in[:], e.out[:])
	if n < outHeaderSize {
		// A request that gets no answer over /dev/fuse (none should come
		// over a ring) still has to give its entry back.
		n = errorReply(e.hdr[hdrInOut:], unique[:], st)
	}
	put32(e.hdr, hdrPayloadSz, uint32(n-outHeaderSize))
}

func (q *queue) serve(e *entry) { e.serveWith(q.t.cfg.Server) }

// commit sends e's reply and gives e back to the kernel for the next
// request. Only the queue's own thread calls it.
func (q *queue) commit(e *entry) {
	s := q.r.sqe()
	if s == nil {
		// The SQ holds 2*depth+2 and at most depth commits and one
		// eventfd read are queued between two enters.
		q.r.enter(false)
		s = q.r.sqe()
	}
	put8(s, sqeOpcode, opURingCmd)
	put32(s, sqeFd, uint32(q.t.cfg.FD))
	put32(s, sqeOff, cmdCommitAndFetch)
	put64(s, sqeUserData, uint64(e.idx))
	put64(s, sqeCmd+cmdReqCommitID, le64(e.hdr[hdrCommitID:]))
	put16(s, sqeCmd+cmdReqQid, uint16(q.qid))
}

func le32(b []byte) uint32 { return *(*uint32)(unsafe.Pointer(&b[0])) }
func le64(b []byte) uint64 { return *(*uint64)(unsafe.Pointer(&b[0])) }
