package fs_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/device"
	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/runtime"
)

// stormConfig is the storm's size. Every knob has an environment
// variable; scripts/stress.sh sets NEURONFS_STORM_ROUNDS for the long run.
type stormConfig struct {
	rounds   int           // NEURONFS_STORM_ROUNDS: 3 (1 with -short)
	procs    int           // NEURONFS_STORM_PROCS: client processes per round, 24
	seconds  float64       // NEURONFS_STORM_SECONDS: each client's run, 1.5
	deadline time.Duration // NEURONFS_STORM_DEADLINE: a round that takes longer is a hang, 60s
	seed     int64         // NEURONFS_STORM_SEED: first round's seed (default: the clock)
}

func readStormConfig(t *testing.T) stormConfig {
	c := stormConfig{rounds: 3, procs: 24, seconds: 1.5, deadline: 60 * time.Second, seed: time.Now().UnixNano() % 1e9}
	if testing.Short() {
		c.rounds = 1
	}
	envInt := func(name string, v *int) {
		if s := os.Getenv(name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n <= 0 {
				t.Fatalf("%s=%q: want a positive number", name, s)
			}
			*v = n
		}
	}
	envInt("NEURONFS_STORM_ROUNDS", &c.rounds)
	envInt("NEURONFS_STORM_PROCS", &c.procs)
	if s := os.Getenv("NEURONFS_STORM_SECONDS"); s != "" {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || f <= 0 {
			t.Fatalf("NEURONFS_STORM_SECONDS=%q: want a positive number", s)
		}
		c.seconds = f
	}
	if s := os.Getenv("NEURONFS_STORM_DEADLINE"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			t.Fatalf("NEURONFS_STORM_DEADLINE=%q: want a duration", s)
		}
		c.deadline = d
	}
	if s := os.Getenv("NEURONFS_STORM_SEED"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("NEURONFS_STORM_SEED=%q: want a number", s)
		}
		c.seed = n
	}
	return c
}

// The storm: rounds of many client processes on the 16 devices of a
// trn2.48xlarge, each mixing every command family (memory, copies, mmap
// stores into chunks and semaphore windows, semaphores, events, exec
// doorbells, notification queues, DMA queues, resets, CRWL, core marks,
// datastore, pod status, garbage commands and pointers), a third of them
// SIGKILLed at random moments. A round that does not end within the
// deadline is a hang: the test dumps every goroutine of the daemon (it
// runs in this process), aborts the FUSE connection to release the stuck
// callers, and fails. After every round every device must answer and be
// back at its baseline; after the last one the daemon's RSS and goroutine
// count must be back near where they started.
func TestStorm(t *testing.T) {
	cfg := readStormConfig(t)
	dmn := testutil.StartDaemon(t, device.Config{Instance: "trn2.48xlarge"})
	t.Logf("storm: %d rounds of %d processes for %gs each, deadline %v, NEURONFS_STORM_SEED=%d",
		cfg.rounds, cfg.procs, cfg.seconds, cfg.deadline, cfg.seed)
	goroutinesBefore := goruntime.NumGoroutine()
	debug.FreeOSMemory()
	rssStart := rssKiB(t)
	rssBefore := rssStart
	start := time.Now()
	for r := range cfg.rounds {
		seed := cfg.seed + int64(r)*1000
		problems := stormRound(t, dmn, cfg, r, seed)
		for _, p := range problems {
			t.Errorf("round %d (NEURONFS_STORM_SEED=%d): %s", r, seed, p)
		}
		if t.Failed() {
			t.FailNow()
		}
		if r == 0 && cfg.rounds > 1 {
			// The first round builds what every device builds once (heap
			// arenas, the race detector's shadow, buffers of the FUSE
			// server): memory growth is measured from its end.
			debug.FreeOSMemory()
			rssBefore = rssKiB(t)
			t.Logf("daemon RSS %d KiB at the start, %d KiB after the first round", rssStart, rssBefore)
		}
	}
	t.Logf("%d rounds in %v", cfg.rounds, time.Since(start).Round(time.Millisecond))
	// Goroutines that served the last requests may still be on their way
	// out: give them until a deadline, which only a leak reaches.
	limit := time.Now().Add(cfg.deadline)
	after := goruntime.NumGoroutine()
	for after > goroutinesBefore+8 && time.Now().Before(limit) {
		time.Sleep(50 * time.Millisecond)
		after = goruntime.NumGoroutine()
	}
	if after > goroutinesBefore+8 {
		t.Errorf("goroutines %d -> %d", goroutinesBefore, after)
	}
	debug.FreeOSMemory()
	if grown := rssKiB(t) - rssBefore; grown > 64<<10 {
		t.Errorf("daemon RSS grew by %d KiB over the storm", grown)
	} else {
		t.Logf("daemon RSS %d KiB -> %+d KiB, goroutines %d -> %d", rssBefore, grown, goroutinesBefore, after)
	}
}

// stormHelper is one client process of a round.
type stormHelper struct {
	cmd    *exec.Cmd
	stderr *tailBuffer
	kill   *time.Timer
	killed atomic.Bool // SIGKILLed on purpose
	ended  atomic.Bool
	err    error // from Wait, once ended
}

// stormRound runs one round and returns what was wrong with it. A hang
// fails the test from here, after the diagnosis.
func stormRound(t *testing.T, dmn *testutil.Daemon, cfg stormConfig, round int, seed int64) []string {
	arch := dmn.Sys.Arch
	rng := rand.New(rand.NewSource(seed))
	helpers := make([]*stormHelper, cfg.procs)
	run := time.Duration(cfg.seconds * float64(time.Second))
	started := time.Now()
	for i := range helpers {
		h := &stormHelper{stderr: &tailBuffer{max: 4096}}
		h.cmd = helperCmd(t, "storm", "NEURONFS_ROOT="+dmn.Dir, fmt.Sprintf("NEURONFS_SEED=%d", seed+int64(i)),
			fmt.Sprintf("NEURONFS_STORM_SECONDS=%g", cfg.seconds),
			fmt.Sprintf("NEURONFS_STORM_CORES=%d", arch.CoresPerDevice),
			fmt.Sprintf("NEURONFS_STORM_ENGINES=%d", arch.DMAEnginesPerCore))
		h.cmd.Stderr = h.stderr
		if err := h.cmd.Start(); err != nil {
			for _, h := range helpers[:i] {
				h.cmd.Process.Kill()
				h.cmd.Wait()
			}
			t.Fatal(err)
		}
		helpers[i] = h
		if i%3 == 0 {
			// A third die at a random moment of their run (or of their
			// start-up, or after they ended: then there is nothing to kill).
			at := time.Duration(rng.Int63n(int64(run + run/2)))
			h.kill = time.AfterFunc(at, func() {
				h.killed.Store(true)
				h.cmd.Process.Kill()
			})
		}
	}
	deadline := time.Now().Add(cfg.deadline)
	// The round goes on in a goroutine that never touches t: if the
	// daemon is wedged it may block for good on a daemon lock, and the
	// test must still end.
	result := make(chan []string, 1)
	phase, timing := &atomic.Value{}, &atomic.Value{}
	phase.Store("waiting for the clients")
	timing.Store("")
	go func() { result <- stormFinish(dmn, helpers, started, deadline, phase, timing) }()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case problems := <-result:
		if testing.Verbose() {
			t.Logf("round %d ended: %s", round, timing.Load())
		}
		return problems
	case <-timer.C:
	}
	// A hang. Say where everyone is, then release them.
	var stuck []string
	for _, h := range helpers {
		if !h.ended.Load() {
			stuck = append(stuck, strconv.Itoa(h.cmd.Process.Pid))
		}
	}
	t.Errorf("round %d (NEURONFS_STORM_SEED=%d) hung: no end after %v (%s); %d of %d clients still running: %s",
		round, seed, cfg.deadline, phase.Load(), len(stuck), len(helpers), strings.Join(stuck, " "))
	for _, pid := range stuck {
		t.Logf("client %s: %s", pid, kernelStacks(pid))
	}
	stacks := allStacks()
	t.Logf("daemon goroutines blocked on locks:\n%s", lockSummary(stacks))
	if path := os.Getenv("NEURONFS_STORM_DUMP"); path != "" {
		os.WriteFile(path, stacks, 0o644)
		t.Logf("all goroutine stacks written to %s", path)
	}
	t.Logf("all goroutine stacks of the test process (the daemon serves in it):\n%s", stacks)
	if err := dmn.Wedge(); err != nil {
		t.Errorf("abort the FUSE connection: %v", err)
	}
	for _, h := range helpers {
		if h.kill != nil {
			h.kill.Stop()
		}
		h.cmd.Process.Kill()
	}
	// With the connection aborted every client ends; one that does not
	// is a caller the abort cannot release.
	released := time.Now().Add(30 * time.Second)
	for _, h := range helpers {
		for !h.ended.Load() && time.Now().Before(released) {
			time.Sleep(10 * time.Millisecond)
		}
		if !h.ended.Load() {
			t.Errorf("client %d did not end after the abort: %s", h.cmd.Process.Pid, kernelStacks(strconv.Itoa(h.cmd.Process.Pid)))
		}
	}
	t.FailNow()
	return nil
}

// stormFinish waits for a round's clients and checks the daemon's state
// afterwards. It reports problems instead of failing the test; phase
// says what it is doing, for the hang report.
func stormFinish(dmn *testutil.Daemon, helpers []*stormHelper, started, deadline time.Time, phase, timing *atomic.Value) (problems []string) {
	fail := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	var wg sync.WaitGroup
	for _, h := range helpers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.err = h.cmd.Wait()
			h.ended.Store(true)
		}()
	}
	wg.Wait()
	clientsEnded := time.Now()
	defer func() {
		timing.Store(fmt.Sprintf("clients %v, checks %v", clientsEnded.Sub(started).Round(time.Millisecond), time.Since(clientsEnded).Round(time.Millisecond)))
	}()
	for _, h := range helpers {
		if h.kill != nil {
			h.kill.Stop()
		}
		var ee *exec.ExitError
		switch {
		case h.err == nil:
		case errors.As(h.err, &ee) && h.killed.Load() && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL:
		default:
			fail("client %d: %v\n%s", h.cmd.Process.Pid, h.err, h.stderr)
		}
	}
	dir, sys := dmn.Dir, dmn.Sys
	host := runtime.Host{Root: dir}
	allCores := uint32(1)<<sys.Arch.CoresPerDevice - 1
	// Every device answers. Notification rings live as long as the
	// device (until their core is reset), as on the driver: reset every
	// core before the baseline. A fresh process gets a datastore.
	phase.Store("checking every device answers")
	var failMu sync.Mutex
	var devs sync.WaitGroup
	for _, d := range sys.Devices {
		devs.Add(1)
		go func() {
			defer devs.Done()
			var bad []string
			defer func() {
				failMu.Lock()
				problems = append(problems, bad...)
				failMu.Unlock()
			}()
			rd, err := host.Open(d.Index)
			if err != nil {
				bad = append(bad, fmt.Sprintf("neuron%d: open after the round: %v", d.Index, err))
				return
			}
			defer rd.Close()
			if _, err := rd.BasicInfo(); err != nil {
				bad = append(bad, fmt.Sprintf("neuron%d: %v", d.Index, err))
			}
			if err := rd.Reset(allCores); err != nil {
				bad = append(bad, fmt.Sprintf("neuron%d: reset after the round: %v", d.Index, err))
			}
			if _, err := rd.AcquireDatastore(0); err != nil {
				bad = append(bad, fmt.Sprintf("neuron%d: datastore after the round: %v", d.Index, err))
			} else if err := rd.ReleaseDatastore(); err != nil {
				bad = append(bad, fmt.Sprintf("neuron%d: datastore release: %v", d.Index, err))
			}
		}()
	}
	devs.Wait()
	// Then it is back at its baseline. Closes end with an asynchronous
	// release: wait for the state to settle, but not past the deadline.
	settle := func(what string, check func() []string) {
		phase.Store("checking " + what)
		for {
			bad := check()
			if len(bad) == 0 {
				return
			}
			if time.Until(deadline) < 10*time.Second {
				problems = append(problems, bad...)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	settle("attach slots, opens and DMA queues", func() (bad []string) {
		for _, d := range sys.Devices {
			if pids := d.AttachedPIDs(); len(pids) != 0 {
				bad = append(bad, fmt.Sprintf("neuron%d: still attached %v", d.Index, pids))
			}
			if n := d.OpenCount(); n != 0 {
				bad = append(bad, fmt.Sprintf("neuron%d: open count %d", d.Index, n))
			}
			if n := d.OwnedQueues(); n != 0 {
				bad = append(bad, fmt.Sprintf("neuron%d: %d DMA queues still owned by a process", d.Index, n))
			}
		}
		return bad
	})
	settle("memory counters", func() (bad []string) {
		for _, d := range sys.Devices {
			base := filepath.Join(dir, fmt.Sprintf("sys/devices/virtual/neuron_device/neuron%d", d.Index))
			for c := range sys.Arch.CoresPerDevice {
				for _, kind := range []string{"device_mem", "host_mem"} {
					p := fmt.Sprintf("%s/neuron_core%d/stats/memory_usage/%s/total", base, c, kind)
					if b, err := os.ReadFile(p); err != nil || string(b) != "0\n" {
						bad = append(bad, fmt.Sprintf("neuron%d core %d %s = %q %v after everyone left", d.Index, c, kind, b, err))
					}
				}
			}
		}
		return bad
	})
	// Every core is reservable: a full-range mark on every device at
	// once succeeds, and closing the free-access fds frees it all.
	settle("core marks", func() []string {
		if n := sys.MarkedCores(); n != 0 {
			return []string{fmt.Sprintf("%d cores still marked", n)}
		}
		return nil
	})
	phase.Store("marking every core")
	var miscs []*runtime.Misc
	for _, d := range sys.Devices {
		m, err := host.OpenMisc(d.Index)
		if err != nil {
			fail("neuron%d: open write-only: %v", d.Index, err)
			continue
		}
		miscs = append(miscs, m)
		n := uint32(sys.Arch.CoresPerDevice)
		if bitmap, err := m.MarkCores(n, 0, n-1); err != nil || bitmap != uint64(allCores) {
			fail("neuron%d: marking every core: bitmap %#x, %v", d.Index, bitmap, err)
		}
	}
	for _, m := range miscs {
		m.Close()
	}
	settle("core marks after the full mark", func() []string {
		if n := sys.MarkedCores(); n != 0 {
			return []string{fmt.Sprintf("%d cores still marked after closing the marking fds", n)}
		}
		return nil
	})
	return problems
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > b.max {
		b.buf = b.buf[len(b.buf)-b.max:]
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// allStacks returns the stacks of every goroutine of this process.
func allStacks() []byte {
	buf := make([]byte, 1<<20)
	for {
		n := goruntime.Stack(buf, true)
		if n < len(buf) {
			return buf[:n]
		}
		buf = make([]byte, 2*len(buf))
	}
}

// lockSummary picks from a goroutine dump those blocked on a mutex or a
// read-write lock inside the emulated driver, keeps their driver frames
// (function names only) and counts goroutines with the same frames: the
// lock cycle of a deadlock reads from the few distinct stacks.
func lockSummary(stacks []byte) string {
	count := map[string]int{}
	var order []string
	for _, g := range bytes.Split(stacks, []byte("\n\n")) {
		lines := strings.Split(string(g), "\n")
		if len(lines) < 2 {
			continue
		}
		state := lines[0]
		if i := strings.Index(state, "["); i >= 0 {
			state = strings.TrimSuffix(strings.SplitN(state[i+1:], ",", 2)[0], "]:")
		}
		if !strings.HasPrefix(state, "sync.") && !strings.HasPrefix(state, "semacquire") {
			continue
		}
		var frames []string
		for _, l := range lines[1:] {
			for _, pkg := range []string{"neuronfs/device.", "neuronfs/fs.", "neuronfs/chip/mmio.", "neuronfs/chip/dma."} {
				if i := strings.Index(l, pkg); i >= 0 && !strings.HasPrefix(l, "\t") {
					name := l[i+len("neuronfs/"):]
					if j := strings.LastIndex(name, "("); j > 0 {
						name = name[:j]
					}
					if j := strings.Index(name, " in goroutine"); j > 0 {
						name = name[:j]
					}
					frames = append(frames, "    "+name)
					break
				}
			}
		}
		if len(frames) == 0 {
			continue
		}
		key := "[" + state + "]\n" + strings.Join(frames, "\n")
		if count[key] == 0 {
			order = append(order, key)
		}
		count[key]++
	}
	if len(order) == 0 {
		return "(none)"
	}
	var out strings.Builder
	for _, k := range order {
		fmt.Fprintf(&out, "%d goroutine(s) %s\n", count[k], k)
	}
	return out.String()
}

// kernelStacks says where each thread of process pid is in the kernel.
func kernelStacks(pid string) string {
	tasks, err := os.ReadDir("/proc/" + pid + "/task")
	if err != nil {
		return "gone (" + err.Error() + ")"
	}
	var out strings.Builder
	for _, task := range tasks {
		base := "/proc/" + pid + "/task/" + task.Name()
		stat, _ := os.ReadFile(base + "/stat")
		state := "?"
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
			state = string(stat[i+2 : i+3])
		}
		wchan, _ := os.ReadFile(base + "/wchan")
		fmt.Fprintf(&out, "\n  task %s state %s wchan %s", task.Name(), state, wchan)
		if stack, err := os.ReadFile(base + "/stack"); err == nil && state == "D" {
			out.WriteString("\n    " + strings.ReplaceAll(strings.TrimSpace(string(stack)), "\n", "\n    "))
		}
	}
	return out.String()
}
