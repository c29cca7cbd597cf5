package pod

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"
)

// fakeDNS answers one name with the addresses a test sets.
type fakeDNS struct {
	mu    sync.Mutex
	name  string
	addrs []string
}

func (f *fakeDNS) set(addrs ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.addrs = addrs
}

func (f *fakeDNS) lookup(ctx context.Context, host string) ([]string, error) {
	if net.ParseIP(host) != nil {
		return []string{host}, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if host != f.name || len(f.addrs) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	// The order DNS gives means nothing: the members sort it.
	out := append([]string(nil), f.addrs...)
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

// Members named by DNS: while the name lists only part of the pod, the
// neighbours read as chips that are not up and the election waits; once
// it lists every member, the pod forms, slots given by sorted address.
func TestNetDNSPeers(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dns := &fakeDNS{name: "pod.svc.test"}
	dns.set("127.0.0.2")
	peers, err := ParsePeers(fmt.Sprintf("dns:pod.svc.test:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	var cfgs []Config
	for i := 0; i < 2; i++ {
		n := &Net{Peers: peers, Secret: testSecret, Timeout: 500 * time.Millisecond,
			Listen: fmt.Sprintf("127.0.0.%d:%d", i+1, port), lookup: dns.lookup}
		cfgs = append(cfgs, testConfig(n, 2))
		cfgs[i].Timeout = 20 * time.Second
	}
	serials := []uint64{0x3000, 0x4000}
	es, rams := startPod(t, cfgs, serials)
	time.Sleep(300 * time.Millisecond)
	for i, e := range es {
		if e.State() != StateInProgress {
			t.Fatalf("node %d with half the pod in DNS: %v", i, e.State())
		}
	}
	dns.set("127.0.0.2", "127.0.0.1")
	waitAll(t, es)
	checkPod(t, es, rams, serials, 2)
	if es[0].Result().NodeID != 0 || es[0].Result().PodSerial != 0x3000 {
		t.Errorf("result %+v", es[0].Result())
	}
}

func TestFindSelf(t *testing.T) {
	dns := &fakeDNS{name: "me.test"}
	dns.set("127.0.0.1")
	ctx := context.Background()
	if slot, err := findSelf(ctx, dns.lookup, []string{"203.0.113.1:5", "me.test:5", "203.0.113.3:5", "unknown.test:5"}); err != nil || slot != 1 {
		t.Errorf("slot %d %v", slot, err)
	}
	if _, err := findSelf(ctx, dns.lookup, []string{"127.0.0.1:5", "me.test:6"}); err == nil {
		t.Error("two entries for this machine accepted")
	}
	if _, err := findSelf(ctx, dns.lookup, []string{"203.0.113.1:5", "203.0.113.2:5"}); err == nil {
		t.Error("no entry for this machine accepted")
	}
}
