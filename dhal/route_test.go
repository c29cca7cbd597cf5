package dhal

import "testing"

// The neighbour windows of V3/V4 decode back to their link and the local
// address; local and host addresses are not routed; V2 has none.
func TestPeerRoutes(t *testing.T) {
	for _, a := range []Arch{V3, V4} {
		f, _ := Facts(a)
		if f.PeerLinks() != 4 {
			t.Fatalf("%v: %d links", a, f.PeerLinks())
		}
		for link := range 4 {
			for _, local := range []uint64{0, f.HBMBases[3] + 0x1234, f.TPBSoCBase(7) + TPBSemIncOffset, f.HostBase | 0x1000} {
				addr, _ := f.PeerAddress(link, local)
				if k, l, ok := f.PeerRoute(addr); !ok || k != link || l != local {
					t.Errorf("%v: %#x decodes to link %d %#x %v, want %d %#x", a, addr, k, l, ok, link, local)
				}
			}
		}
		if _, _, ok := f.PeerRoute(f.HostBase | f.HBMBases[2]); ok {
			t.Errorf("%v: a host address is routed to a neighbour", a)
		}
		if got, _ := f.PeerAddress(1, 0x42); got != 0x14000000000042 {
			t.Errorf("%v: link 1 window at %#x", a, got)
		}
	}
	f, _ := Facts(V2)
	if _, ok := f.PeerAddress(0, 0); ok || f.PeerLinks() != 0 {
		t.Error("V2 has a neighbour window")
	}
	if f.TPBSoCBase(1) != 0xfffc4000000 || f.TPBSoCBase(2) != InvalidOffset {
		t.Errorf("V2 TPB SoC bases %#x %#x", f.TPBSoCBase(1), f.TPBSoCBase(2))
	}
}
