package mempool

import (
	"testing"

	"github.com/neuronfs/neuronfs/dhal"
)

// Two devices of one host never hand out the same host address, and each
// address names the device whose memory holds it until it is freed.
func TestHostSpaceIsShared(t *testing.T) {
	f, _ := dhal.Facts(dhal.V3)
	hs := NewHostSpace()
	a, b := NewOnHost(f, hs, "a"), NewOnHost(f, hs, "b")
	ca, err := a.Alloc(AllocRequest{Size: 1 << 20, Host: true, Lifespan: LifespanDevice})
	if err != nil {
		t.Fatal(err)
	}
	cb, err := b.Alloc(AllocRequest{Size: 1 << 20, Host: true, Lifespan: LifespanDevice})
	if err != nil {
		t.Fatal(err)
	}
	if ca.PA == cb.PA {
		t.Fatalf("both devices got host address %#x", ca.PA)
	}
	for _, c := range []struct {
		pa    uint64
		owner string
	}{{ca.PA, "a"}, {ca.PA + 1<<20 - 1, "a"}, {cb.PA + 4096, "b"}} {
		if o, ok := hs.Owner(c.pa &^ f.HostBase); !ok || o != c.owner {
			t.Errorf("owner of %#x: %v %v, want %s", c.pa, o, ok, c.owner)
		}
	}
	release(b, cb, 0)
	if _, ok := hs.Owner(cb.PA &^ f.HostBase); ok {
		t.Error("a freed range still has an owner")
	}
}
