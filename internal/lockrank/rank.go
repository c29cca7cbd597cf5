// Package lockrank gives every lock of the daemon a rank in one documented
// order and, in checked builds, enforces it: a goroutine may take a lock
// only if every lock it already holds ranks lower, it never takes a read
// lock twice, and it holds no lock where it is about to wait (NoLocks).
//
// The order is the constants below, outermost first, and the table order
// says what each rank's locks guard; docs/lock-order.md is rendered from
// both (go generate ./device), and TestOrderDocumentedAndUsed checks that
// every rank is some lock's and every lock's rank is in the table.
//
// Checking costs a goroutine-id lookup per acquisition, so it runs only in
// test binaries (or with NEURONFS_LOCKCHECK=1); production builds pay one
// atomic load.
package lockrank

// Rank is a lock's place in the order; higher ranks are taken later.
type Rank uint8

// The ranks, outermost first: a lock may call down the list while held,
// never up.
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
	RankPool
	RankHostSpace
	RankPattern
	RankMetrics
	RankRegisters
	RankMemLimit
	RankTransport
	RankTestbed
	RankExecTrace
	RankEnginePool
	RankSpaceStore
	rankCount
)

// Info documents one rank.
type Info struct {
	Rank   Rank
	Name   string // the rank type's name
	Owner  string // the packages whose locks have it
	Guards string // what those locks guard
}

// order is what each rank's locks guard; the one source of the
// documented order.
var order = [rankCount]Info{
	rankNone:        {Name: "none"},
	RankPodElection: {Name: "PodElection", Owner: "pod", Guards: "one server's election state (class files, status)"},
	RankPodLink: {Name: "PodLink", Owner: "pod", Guards: "one server's connection to its pod's host, or (a pod across machines) one cable " +
		"to a neighbour, held for one request/answer exchange, which has a deadline (the only lock held across I/O, connecting included)"},
	RankPodRegistry: {Name: "PodRegistry", Owner: "pod", Guards: "a coordinator's pods and connections"},
	RankPodHub:      {Name: "PodHub", Owner: "pod", Guards: "one pod's meeting point (slots, published registers)"},
	RankDevice: {Name: "Device", Owner: "device", Guards: "the driver's per-device state: the process table (attach slots), device state, " +
		"reset queue, core locks, core init, datastore slots, NQ rings, DMA queue ownership (the driver's ncdev_lock and nd locks)"},
	RankHost:       {Name: "Host", Owner: "device", Guards: "host-wide driver state: core reservations, datastore release order, notify_delay, metrics mode"},
	RankAsyncCopy:  {Name: "AsyncCopy", Owner: "device", Guards: "a core's asynchronous-copy contexts"},
	RankExec:       {Name: "Exec", Owner: "chip", Guards: "one core's execution state (doorbells queued, halt, the staged programs running)"},
	RankFWClient:   {Name: "FWClient", Owner: "mmio", Guards: "the driver's side of the FW-IO mailbox"},
	RankDriverRing: {Name: "DriverRing", Owner: "device", Guards: "a core's default h2t ring (descriptor writing)"},
	RankNotific:    {Name: "Notific", Owner: "nq", Guards: "one NOTIFIC block (queue registers, record writer)"},
	RankEngine:     {Name: "Engine", Owner: "dma", Guards: "one UDMA engine's queues"},
	RankFirmware:   {Name: "Firmware", Owner: "mmio", Guards: "the emulated firmware's registers and mailbox"},
	RankPool:       {Name: "Pool", Owner: "device/mempool", Guards: "one device's allocator and handle table"},
	RankHostSpace:  {Name: "HostSpace", Owner: "device/mempool", Guards: "the host's DMA address space"},
	RankPattern:    {Name: "Pattern", Owner: "chip", Guards: "pending HBM scrub patterns"},
	RankMetrics:    {Name: "Metrics", Owner: "device", Guards: "sysfs counters"},
	RankRegisters:  {Name: "Registers", Owner: "mmio", Guards: "plain BAR registers"},
	RankMemLimit:   {Name: "MemLimit", Owner: "device", Guards: "the host's memory limit (what the backing files hold, checked and reserved before a write)"},
	RankTransport: {Name: "Transport", Owner: "fs, internal/fuseuring, internal/chardev", Guards: "the thread-to-process cache, on-behalf opens and direct opens (fs), " +
		"a queue's list of replies from workers (fuseuring), descriptor numbers reserved for an installation under way, the cache of callers' pinned memory and the live attribute pipes (chardev); leaves"},
	RankTestbed:    {Name: "Testbed", Owner: "testbed", Guards: "a test's emulated host: the commands it serves and whether it is closing; a leaf"},
	RankExecTrace:  {Name: "ExecTrace", Owner: "chip/exectrace", Guards: "the execution trace file (--exec-trace): its buffer, named tracks and counts; a leaf, taken by engines and DMA queues holding nothing"},
	RankEnginePool: {Name: "EnginePool", Owner: "chip", Guards: "a chip's engines waiting for a turn on its bounded set of engine goroutines, and how many of those run; a leaf, taken holding nothing"},
	RankSpaceStore: {Name: "SpaceStore", Owner: "chip/spacefs", Guards: "in the store process (not the daemon): the table of physical spaces, and one space's extent map, " +
		"read-held across that space's disk reads and writes so a punch or reserve never moves an extent under them; never nested; a leaf"},
}

// Order lists the ranks outermost first, with what their locks guard.
func Order() []Info {
	out := make([]Info, 0, rankCount-1)
	for r := rankNone + 1; r < rankCount; r++ {
		i := order[r]
		i.Rank = r
		out = append(out, i)
	}
	return out
}

func (r Rank) String() string {
	if r < rankCount {
		return order[r].Name
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
	Pool        struct{}
	HostSpace   struct{}
	Pattern     struct{}
	Metrics     struct{}
	Registers   struct{}
	MemLimit    struct{}
	Transport   struct{}
	Testbed     struct{}
	ExecTrace   struct{}
	EnginePool  struct{}
	SpaceStore  struct{}
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
func (Pool) Rank() Rank        { return RankPool }
func (HostSpace) Rank() Rank   { return RankHostSpace }
func (Pattern) Rank() Rank     { return RankPattern }
func (Metrics) Rank() Rank     { return RankMetrics }
func (Registers) Rank() Rank   { return RankRegisters }
func (MemLimit) Rank() Rank    { return RankMemLimit }
func (Transport) Rank() Rank   { return RankTransport }
func (Testbed) Rank() Rank     { return RankTestbed }
func (ExecTrace) Rank() Rank   { return RankExecTrace }
func (EnginePool) Rank() Rank  { return RankEnginePool }
func (SpaceStore) Rank() Rank  { return RankSpaceStore }
