package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/pod"
)

// Pods across machines, tested as daemons in network namespaces of their
// own, joined by a bridge (itself in a namespace): every address exists
// only inside the test's namespaces. The answers expected are the ones
// pod.TestNetMatchesLocal shows the in-process hub gives.

// requireNetns fails the test under NEURONFS_REQUIRE_FUSE=1, skips it
// otherwise, when it cannot make network namespaces.
func requireNetns(t *testing.T) {
	t.Helper()
	why := ""
	for _, tool := range []string{"ip", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			why = "needs " + tool
		}
	}
	if why == "" && os.Geteuid() != 0 {
		why = "needs root"
	}
	if why == "" {
		return
	}
	if os.Getenv("NEURONFS_REQUIRE_FUSE") == "1" {
		t.Fatalf("NEURONFS_REQUIRE_FUSE=1 but this test %s", why)
	}
	t.Skip(why)
}

func ip(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

var netnsSeq atomic.Int32

// netPod is one pod's namespaces and daemons.
type netPod struct {
	size   int
	ns     []string // one per node
	peers  string
	secret string
	cmds   []*exec.Cmd
	dirs   []string
}

const podPort = 7470

// newNetPod makes size namespaces on one bridge: node i has 10.213.0.i+1.
func newNetPod(t *testing.T, size int) *netPod {
	t.Helper()
	requireNetns(t)
	id := fmt.Sprintf("nfs%d-%d", os.Getpid(), netnsSeq.Add(1))
	br := id + "-br"
	// Registered with the guard first: a binary that dies anywhere after
	// the add still loses the namespace.
	testutil.GuardCommand(t, "ip", "netns", "del", br)
	ip(t, "netns", "add", br)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", br).Run() })
	ip(t, "-n", br, "link", "add", "br0", "type", "bridge")
	ip(t, "-n", br, "link", "set", "br0", "up")
	p := &netPod{size: size, cmds: make([]*exec.Cmd, size), dirs: make([]string, size)}
	var addrs []string
	for i := 0; i < size; i++ {
		ns := fmt.Sprintf("%s-%d", id, i)
		testutil.GuardCommand(t, "ip", "netns", "del", ns)
		ip(t, "netns", "add", ns)
		t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
		port := fmt.Sprintf("p%d", i)
		ip(t, "-n", br, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns)
		ip(t, "-n", br, "link", "set", port, "master", "br0", "up")
		ip(t, "-n", ns, "link", "set", "lo", "up")
		ip(t, "-n", ns, "addr", "add", fmt.Sprintf("10.213.0.%d/24", i+1), "dev", "eth0")
		ip(t, "-n", ns, "link", "set", "eth0", "up")
		p.ns = append(p.ns, ns)
		addrs = append(addrs, fmt.Sprintf("10.213.0.%d:%d", i+1, podPort))
	}
	p.peers = strings.Join(addrs, ",")
	p.secret = writeSecret(t, "the-pod-secret-shared-by-all-members")
	return p
}

func writeSecret(t *testing.T, s string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(f, []byte(s+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// cut breaks the cable between nodes a and b as a pulled cable would:
// neither reaches the other any more.
func (p *netPod) cut(t *testing.T, a, b int) {
	ip(t, "-n", p.ns[a], "route", "add", "prohibit", fmt.Sprintf("10.213.0.%d/32", b+1))
	ip(t, "-n", p.ns[b], "route", "add", "prohibit", fmt.Sprintf("10.213.0.%d/32", a+1))
}

// start runs node i's daemon in its namespace (and the test's mount
// namespace, where its mount is read) and waits for its mount.
func (p *netPod) start(t *testing.T, i int, serial uint64, extra ...string) {
	t.Helper()
	p.launch(t, i, serial, extra...)
	p.waitUp(t, i)
}

// startAll starts every node at once: a daemon's election deadline runs
// from its start, so the pod must not wait for each mount in turn.
func (p *netPod) startAll(t *testing.T, serials []uint64, extra ...string) {
	t.Helper()
	for i, s := range serials {
		p.launch(t, i, s, extra...)
	}
	for i := range serials {
		p.waitUp(t, i)
	}
}

func (p *netPod) waitUp(t *testing.T, i int) {
	t.Helper()
	waitFor(t, "the mount", func() bool {
		_, err := os.Stat(filepath.Join(p.dirs[i], "sys/module/neuron/version"))
		return err == nil
	})
}

func (p *netPod) launch(t *testing.T, i int, serial uint64, extra ...string) {
	t.Helper()
	dir := t.TempDir()
	args := append([]string{"mount", "--instance=trn2u.48xlarge", "--pod=netpod", fmt.Sprintf("--pod-size=%d", p.size),
		fmt.Sprintf("--node-serial=%#x", serial), "--pod-peers=" + p.peers, "--pod-secret-file=" + p.secret,
		"--pod-timeout=10s", "--pod-retry-timeout=1s", "--pod-link-timeout=500ms", "--pod-poll-interval=5ms"}, extra...)
	cmd := neuronfs(t, append(args, dir)...)
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Path = nsenter
	cmd.Args = append([]string{"nsenter", "--net=/run/netns/" + p.ns[i], "--", os.Args[0]}, cmd.Args[1:]...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
		}
		syscall.Unmount(dir, syscall.MNT_DETACH)
	})
	p.cmds[i], p.dirs[i] = cmd, dir
}

// kill ends node i's daemon as a crash would.
func (p *netPod) kill(t *testing.T, i int) {
	p.cmds[i].Process.Kill()
	p.cmds[i].Wait()
	syscall.Unmount(p.dirs[i], syscall.MNT_DETACH)
	p.dirs[i] = ""
}

// answers reads node i's class attributes once its election settled.
func (p *netPod) answers(t *testing.T, i int, within time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(within)
	for testutil.ClassFile(t, p.dirs[i], "ultraserver_mode") == "busy\n" {
		if time.Now().After(deadline) {
			t.Fatalf("node %d: still electing after %v", i, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var b strings.Builder
	for _, f := range []string{"ultraserver_mode", "node_id_4", "server_id_4", "node_id_2", "server_id_2"} {
		b.WriteString(testutil.ClassFile(t, p.dirs[i], f))
	}
	return b.String()
}

// classAnswers renders what the class attributes show for r.
func classAnswers(r pod.Result) string {
	var modes []string
	for m := pod.ModeX4; m <= pod.ModeX1; m++ {
		if r.ModeSupported(m) {
			modes = append(modes, fmt.Sprint(int(m)))
		}
	}
	s := strings.Join(modes, ",") + "\n"
	for _, n := range []int{4, 2} {
		m := r.SysfsMode(n)
		s += fmt.Sprintf("%d\n%016x\n", r.ModalNodeID(m), r.ModalSerial(m))
	}
	return s
}

var single = pod.Result{NodeID: -1}

func (p *netPod) check(t *testing.T, want map[int]pod.Result, within time.Duration) {
	t.Helper()
	for i := 0; i < p.size; i++ {
		r, ok := want[i]
		if !ok {
			continue
		}
		if got, w := p.answers(t, i, within), classAnswers(r); got != w {
			t.Errorf("node %d: %q, want %q", i, got, w)
		}
	}
}

var fourSerials = []uint64{0x4000, 0x1000, 0x3000, 0x2000}

// Four daemons in four namespaces elect the pod four on one host elect:
// the lowest serial (slot 1) is node 0, the one opposite it node 2. Each
// finds its slot by its own address in --pod-peers.
func TestNetPodFour(t *testing.T) {
	t.Parallel()
	p := newNetPod(t, 4)
	// A pod that forms ends its election then: a long deadline costs
	// nothing and keeps a loaded machine from splitting it.
	p.startAll(t, fourSerials, "--pod-timeout=60s")
	ids := []int{3, 0, 2, 1}
	want := map[int]pod.Result{}
	for i, id := range ids {
		want[i] = pod.Result{NodeID: id, NodeCount: 4, PodSerial: 0x1000, LRMask: pod.LinkBoth}
	}
	p.check(t, want, 60*time.Second)
}

// The cable between slots 0 and 1 is cut: their elections fail over both
// links, then over the right link (theirs), then the left link finds its
// neighbours already done; slots 2 and 3 form a 2-node pod over their
// right link. They reach that retry at their deadlines, which start with
// their daemons: the retry must outlast the daemons' start-up skew (a
// real pod's 120 s does).
func TestNetPodFourCutLink(t *testing.T) {
	t.Parallel()
	p := newNetPod(t, 4)
	p.cut(t, 0, 1)
	p.startAll(t, fourSerials, "--pod-retry-timeout=6s")
	p.check(t, map[int]pod.Result{0: single, 1: single,
		2: {NodeID: 1, NodeCount: 2, PodSerial: 0x2000, LRMask: pod.LinkRight},
		3: {NodeID: 0, NodeCount: 2, PodSerial: 0x2000, LRMask: pod.LinkRight}}, 60*time.Second)
}

// Slot 3 holds another secret: its links are dead to its neighbours, and
// the driver's procedure leaves every node single.
func TestNetPodFourWrongSecret(t *testing.T) {
	t.Parallel()
	p := newNetPod(t, 4)
	good := p.secret
	for i, s := range fourSerials {
		if i == 3 {
			p.secret = writeSecret(t, "a-stranger-with-another-secret")
		}
		p.launch(t, i, s)
		p.secret = good
	}
	for i := range fourSerials {
		p.waitUp(t, i)
	}
	p.check(t, map[int]pod.Result{0: single, 1: single, 2: single, 3: single}, 60*time.Second)
}

// Slots 1, 2 and 3 start and wait for slot 0; slot 3 dies in the middle
// of the election, then slot 0 comes: every survivor ends single.
func TestNetPodFourKillMidElection(t *testing.T) {
	t.Parallel()
	p := newNetPod(t, 4)
	for i := 1; i < 4; i++ {
		p.launch(t, i, fourSerials[i])
	}
	for i := 1; i < 4; i++ {
		p.waitUp(t, i)
	}
	time.Sleep(time.Second) // their links to slot 3 are up, their elections waiting
	for i := 1; i < 4; i++ {
		if got := testutil.ClassFile(t, p.dirs[i], "ultraserver_mode"); got != "busy\n" {
			t.Fatalf("node %d not electing: %q", i, got)
		}
	}
	p.kill(t, 3)
	// Slot 0's deadline alone bounds how long the rest takes.
	p.start(t, 0, fourSerials[0], "--pod-timeout=4s")
	p.check(t, map[int]pod.Result{0: single, 1: single, 2: single}, 60*time.Second)
}

// A 2-node pod forms over both links, and falls apart as the driver says
// under a wrong secret, a partition and a peer dying mid-election.
func TestNetPodTwo(t *testing.T) {
	t.Parallel()
	serials := []uint64{0x9000, 0x5000}
	t.Run("form", func(t *testing.T) {
		p := newNetPod(t, 2)
		p.startAll(t, serials, "--pod-timeout=60s")
		p.check(t, map[int]pod.Result{0: {NodeID: 1, NodeCount: 2, PodSerial: 0x5000, LRMask: pod.LinkBoth},
			1: {NodeID: 0, NodeCount: 2, PodSerial: 0x5000, LRMask: pod.LinkBoth}}, 60*time.Second)
	})
	t.Run("wrong-secret", func(t *testing.T) {
		p := newNetPod(t, 2)
		p.launch(t, 0, serials[0])
		p.secret = writeSecret(t, "a-stranger-with-another-secret")
		p.launch(t, 1, serials[1])
		p.waitUp(t, 0)
		p.waitUp(t, 1)
		p.check(t, map[int]pod.Result{0: single, 1: single}, 60*time.Second)
	})
	t.Run("partition", func(t *testing.T) {
		p := newNetPod(t, 2)
		p.cut(t, 0, 1)
		p.startAll(t, serials)
		p.check(t, map[int]pod.Result{0: single, 1: single}, 60*time.Second)
	})
	t.Run("kill-mid-election", func(t *testing.T) {
		// Slot 1 waits for slot 0 with a long deadline. Slot 0 comes with
		// both links faulty, so it fails at once, while slot 1 has read its
		// serials and waits for its election data. Then slot 0 dies: slot 1
		// must notice the broken links long before its deadline.
		p := newNetPod(t, 2)
		p.start(t, 1, serials[1], "--pod-timeout=10m", "--pod-retry-timeout=10m")
		p.start(t, 0, serials[0], "--pod-link-fault=both")
		p.check(t, map[int]pod.Result{0: single}, 60*time.Second)
		if got := testutil.ClassFile(t, p.dirs[1], "ultraserver_mode"); got != "busy\n" {
			t.Fatalf("slot 1 not electing: %q", got)
		}
		p.kill(t, 0)
		p.check(t, map[int]pod.Result{1: single}, 60*time.Second)
	})
}

func TestPodNetFlagsChecked(t *testing.T) {
	short := writeSecret(t, "too-short")
	good := writeSecret(t, "the-pod-secret-shared-by-all-members")
	pod := []string{"--instance=trn2u.48xlarge", "--pod=x", "--node-serial=hash:node-a", "--pod-size=2"}
	for _, args := range [][]string{
		{"--instance=trn2u.48xlarge", "--pod-peers=a:1,b:2"},
		append(pod, "--pod-peers=a:1,b:2"),
		append(pod, "--pod-peers=a:1,b:2", "--pod-secret-file="+short),
		append(pod, "--pod-peers=a:1,b:2", "--pod-secret-file=/nonexistent"),
		append(pod, "--pod-peers=a:1,b:2,c:3,d:4", "--pod-secret-file="+good),
		append(pod, "--pod-peers=a,b", "--pod-secret-file="+good),
		append(pod, "--pod-peers=dns:svc", "--pod-secret-file="+good),
		{"--instance=trn2u.48xlarge", "--pod=x", "--node-serial=hash:"},
	} {
		cmd := neuronfs(t, append(append([]string{"mount"}, args...), t.TempDir())...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Run(); err == nil {
			t.Errorf("%v: accepted", args)
		} else if !strings.Contains(stderr.String(), "pod") && !strings.Contains(stderr.String(), "serial") {
			t.Errorf("%v: %q", args, stderr.String())
		}
	}
}
