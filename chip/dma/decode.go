package dma

import "sort"

// The address decoder of a Space: which space answers an address
// (neighbour windows, host route, this one), aliases inside a space, and
// the effect windows whose writes act.

// Alias is a range of addresses that reaches the memory at To instead: a
// core's SoC windows where its mmap resources put that memory.
type Alias struct {
	Range
	To uint64
}

// SetAliases installs the aliases; it must run before any engine uses
// the space. Ranges must not overlap.
func (m *Space) SetAliases(as []Alias) {
	m.aliases = append([]Alias(nil), as...)
	sort.Slice(m.aliases, func(i, j int) bool { return m.aliases[i].Base < m.aliases[j].Base })
}

// dealias maps [pa, pa+n) through the alias that holds all of it, if
// any: an access reaching beyond an alias stays where it is.
func (m *Space) dealias(pa, n uint64) uint64 {
	i := sort.Search(len(m.aliases), func(i int) bool { return m.aliases[i].Base+m.aliases[i].Size > pa })
	if i < len(m.aliases) && m.aliases[i].Contains(pa, n) {
		return pa - m.aliases[i].Base + m.aliases[i].To
	}
	return pa
}

// Effect is a window of a Space whose writes act rather than store: Apply
// gets the offset inside the window and the bytes written. It runs in the
// writing engine's goroutine with no engine lock held.
type Effect struct {
	Range
	Apply func(off uint64, b []byte)
}

// SetEffects installs the effect windows; it must run before any engine
// uses the space. Windows must not overlap.
func (m *Space) SetEffects(es []Effect) {
	m.effects = append([]Effect(nil), es...)
	sort.Slice(m.effects, func(i, j int) bool { return m.effects[i].Base < m.effects[j].Base })
}

// resolve finds the space that answers pa and the address inside it. A
// peer's own neighbour windows are not followed: one hop is all a link
// gives.
func (m *Space) resolve(pa, n uint64) (*Space, uint64, bool) {
	if m.PeerRoute != nil {
		if link, local, ok := m.PeerRoute(pa); ok {
			p := m.Peer(link)
			if p == nil {
				return nil, 0, false
			}
			t := p.hostOwner(local)
			return t, t.dealias(local, n), true
		}
	}
	t := m.hostOwner(pa)
	return t, t.dealias(pa, n), true
}

// hostOwner is the space whose memory holds pa: for a host address of
// another device's chunk that device's (host memory is one on a real
// host), else m.
func (m *Space) hostOwner(pa uint64) *Space {
	if m.HostOwner != nil && pa >= m.HostLo && pa < m.HostHi {
		if other := m.HostOwner(pa); other != nil {
			return other
		}
	}
	return m
}

// Write implements Memory: src lands at pa, except that the parts inside
// an effect window of the owning space perform its operation.
func (m *Space) Write(pa uint64, src []byte) bool {
	t, a, ok := m.resolve(pa, uint64(len(src)))
	if !ok {
		return false
	}
	for len(src) > 0 {
		n := uint64(len(src))
		e := t.effectFrom(a, n)
		if e == nil || e.Base > a {
			plain := n
			if e != nil {
				plain = e.Base - a
			}
			b, ok := t.sliceWrite(a, plain)
			if !ok {
				return false
			}
			n = uint64(copy(b, src))
		} else {
			n = min(n, e.Base+e.Size-a)
			e.Apply(a-e.Base, src[:n])
		}
		a, src = a+n, src[n:]
	}
	return true
}

// effectFrom returns the first effect window that ends after pa and
// starts before pa+n, or nil.
func (m *Space) effectFrom(pa, n uint64) *Effect {
	i := sort.Search(len(m.effects), func(i int) bool { return m.effects[i].Base+m.effects[i].Size > pa })
	if i == len(m.effects) || m.effects[i].Base >= pa+n {
		return nil
	}
	return &m.effects[i]
}
