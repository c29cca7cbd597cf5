package pod

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Peers names the servers of a pod that spans machines, in slot order:
// either a fixed list of HOST:PORT (the same list on every server), or a
// DNS name whose addresses (a Kubernetes headless Service's, say), sorted,
// give the slots, all at one port.
type Peers struct {
	list []string
	dns  string
	port string
}

// ParsePeers reads "HOST:PORT,HOST:PORT,..." or "dns:NAME:PORT".
func ParsePeers(s string) (Peers, error) {
	if rest, ok := strings.CutPrefix(s, "dns:"); ok {
		name, port, err := net.SplitHostPort(rest)
		if err != nil || name == "" || !validPort(port) {
			return Peers{}, fmt.Errorf("pod peers %q: want dns:NAME:PORT", s)
		}
		return Peers{dns: name, port: port}, nil
	}
	var p Peers
	for _, a := range strings.Split(s, ",") {
		host, port, err := net.SplitHostPort(strings.TrimSpace(a))
		if err != nil || host == "" || !validPort(port) {
			return Peers{}, fmt.Errorf("pod peer %q: want HOST:PORT", a)
		}
		p.list = append(p.list, net.JoinHostPort(host, port))
	}
	if len(p.list) != 2 && len(p.list) != 4 {
		return Peers{}, fmt.Errorf("pod peers: %d listed, a pod has 2 or 4", len(p.list))
	}
	return p, nil
}

func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n > 0 && n < 65536
}

// Fixed reports whether the list is known without asking DNS.
func (p Peers) Fixed() bool { return p.dns == "" }

// Len is the number of servers listed (0 for DNS).
func (p Peers) Len() int { return len(p.list) }

// Port is the DNS form's port ("" for a list).
func (p Peers) Port() string { return p.port }

func (p Peers) String() string {
	if p.dns != "" {
		return "dns:" + net.JoinHostPort(p.dns, p.port)
	}
	return strings.Join(p.list, ",")
}

// lookupFunc resolves a host name (net.Resolver.LookupHost; tests fake it).
type lookupFunc func(ctx context.Context, host string) ([]string, error)

// resolve returns the members' addresses in slot order.
func (p Peers) resolve(ctx context.Context, lookup lookupFunc) ([]string, error) {
	if p.dns == "" {
		return slices.Clone(p.list), nil
	}
	hosts, err := lookup(ctx, p.dns)
	if err != nil {
		return nil, err
	}
	var ips []netip.Addr
	for _, h := range hosts {
		if a, err := netip.ParseAddr(h); err == nil {
			ips = append(ips, a.Unmap())
		}
	}
	slices.SortFunc(ips, func(a, b netip.Addr) int { return a.Compare(b) })
	ips = slices.Compact(ips)
	out := make([]string, len(ips))
	for i, a := range ips {
		out[i] = net.JoinHostPort(a.String(), p.port)
	}
	return out, nil
}

// findSelf returns the slot of the one entry whose host is an address of
// this machine (or network namespace).
func findSelf(ctx context.Context, lookup lookupFunc, addrs []string) (int, error) {
	ifaddrs, err := net.InterfaceAddrs()
	if err != nil {
		return -1, err
	}
	local := map[netip.Addr]bool{}
	for _, a := range ifaddrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			local[p.Addr().Unmap()] = true
		}
	}
	self := -1
	for i, a := range addrs {
		host, _, _ := net.SplitHostPort(a)
		ips, err := lookup(ctx, host)
		if err != nil {
			continue // a neighbour's name may not resolve yet; ours does
		}
		for _, ip := range ips {
			if x, err := netip.ParseAddr(ip); err == nil && local[x.Unmap()] {
				if self >= 0 && self != i {
					return -1, fmt.Errorf("pod peers %s and %s are both this machine: give --pod-slot", addrs[self], a)
				}
				self = i
			}
		}
	}
	if self < 0 {
		return -1, fmt.Errorf("none of the pod peers %v is this machine", addrs)
	}
	return self, nil
}
