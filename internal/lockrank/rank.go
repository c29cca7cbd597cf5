// Package lockrank gives every lock of the daemon a rank in one documented
// order and, in checked builds, enforces it: a goroutine may take a lock
// only if every lock it already holds ranks lower, it never takes a read
// lock twice, and it holds no lock where it is about to wait (NoLocks).
//
// The order, outermost first. A lock may call down the list while held,
// never up; the packages named own the locks.
//
//	PodElection   pod: one server's election state (class files, status)
//	PodLink       pod: one server's connection to its pod's host, or (a
//	              pod across machines) one cable to a neighbour, held for
//	              one request/answer exchange, which has a deadline (the
//	              only lock held across I/O, connecting included)
//	PodRegistry   pod: a coordinator's pods and connections
//	PodHub        pod: one pod's meeting point (slots, published registers)
//	Device        device: the driver's per-device state: the process
//	              table (attach slots), device state, reset queue, core
//	              locks, core init, datastore slots, NQ rings, DMA queue
//	              ownership (the driver's ncdev_lock and nd locks)
//	Host          device: host-wide driver state: core reservations,
//	              datastore release order, notify_delay, metrics mode
//	AsyncCopy     device: a core's asynchronous-copy contexts
//	Exec          chip: one core's execution state (doorbells queued, halt)
//	FWClient      mmio: the driver's side of the FW-IO mailbox
//	DriverRing    device: a core's default h2t ring (descriptor writing)
//	Notific       nq: one NOTIFIC block (queue registers, record writer)
//	Engine        dma: one UDMA engine's queues
//	Firmware      mmio: the emulated firmware's registers and mailbox
//	Semaphore     chip: one core's semaphore and event words
//	Pool          mempool: one device's allocator and handle table
//	HostSpace     mempool: the host's DMA address space
//	Pattern       device: pending HBM scrub patterns
//	Metrics       device: sysfs counters
//	Registers     mmio: plain BAR registers
//	MemLimit      device: the host's memory limit (what the backing
//	              files hold, checked and reserved before a write)
//	Transport     fs: thread-to-process cache, on-behalf opens; fuseuring:
//	              a queue's list of replies from workers (leaves)
//
// Checking costs a goroutine-id lookup per acquisition, so it runs only in
// test binaries (or with NEURONFS_LOCKCHECK=1); production builds pay one
// atomic load.
package lockrank

// Rank is a lock's place in the order; higher ranks are taken later.
type Rank uint8

// The ranks, in the order above.
const (
	rankNone Rank = iota
	RankPodElection
	RankPodLink
	RankPodRegistry
	RankPodHub
	RankDevice
	RankHost
	RankAsyncCopy
	RankExec
	RankFWClient
	RankDriverRing
	RankNotific
	RankEngine
	RankFirmware
	RankSemaphore
	RankPool
	RankHostSpace
	RankPattern
	RankMetrics
	RankRegisters
	RankMemLimit
	RankTransport
	rankCount
)

var rankNames = [rankCount]string{
	"none", "PodElection", "PodLink", "PodRegistry", "PodHub", "Device", "Host", "AsyncCopy", "Exec", "FWClient",
	"DriverRing", "Notific", "Engine", "Firmware", "Semaphore", "Pool", "HostSpace",
	"Pattern", "Metrics", "Registers", "MemLimit", "Transport",
}

func (r Rank) String() string {
	if r < rankCount {
		return rankNames[r]
	}
	return "invalid"
}

// Ranker names a rank as a type, so a lock's rank is part of its type and
// a zero lock is ready to use: lockrank.Mutex[lockrank.Device].
type Ranker interface{ Rank() Rank }

// The rank types.
type (
	PodElection struct{}
	PodLink     struct{}
	PodRegistry struct{}
	PodHub      struct{}
	Device      struct{}
	Host        struct{}
	AsyncCopy   struct{}
	Exec        struct{}
	FWClient    struct{}
	DriverRing  struct{}
	Notific     struct{}
	Engine      struct{}
	Firmware    struct{}
	Semaphore   struct{}
	Pool        struct{}
	HostSpace   struct{}
	Pattern     struct{}
	Metrics     struct{}
	Registers   struct{}
	MemLimit    struct{}
	Transport   struct{}
)

func (PodElection) Rank() Rank { return RankPodElection }
func (PodLink) Rank() Rank     { return RankPodLink }
func (PodRegistry) Rank() Rank { return RankPodRegistry }
func (PodHub) Rank() Rank      { return RankPodHub }
func (Device) Rank() Rank      { return RankDevice }
func (Host) Rank() Rank        { return RankHost }
func (AsyncCopy) Rank() Rank   { return RankAsyncCopy }
func (Exec) Rank() Rank        { return RankExec }
func (FWClient) Rank() Rank    { return RankFWClient }
func (DriverRing) Rank() Rank  { return RankDriverRing }
func (Notific) Rank() Rank     { return RankNotific }
func (Engine) Rank() Rank      { return RankEngine }
func (Firmware) Rank() Rank    { return RankFirmware }
func (Semaphore) Rank() Rank   { return RankSemaphore }
func (Pool) Rank() Rank        { return RankPool }
func (HostSpace) Rank() Rank   { return RankHostSpace }
func (Pattern) Rank() Rank     { return RankPattern }
func (Metrics) Rank() Rank     { return RankMetrics }
func (Registers) Rank() Rank   { return RankRegisters }
func (MemLimit) Rank() Rank    { return RankMemLimit }
func (Transport) Rank() Rank   { return RankTransport }
