package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/runtime"
)

func init() {
	// mmapowner allocates a device chunk, prints its offset and size and
	// holds it until its stdin closes.
	clients["mmapowner"] = func() int {
		d, err := runtime.Host{Root: "/"}.Open(0)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		m, err := d.Alloc(1<<20, runtime.AllocOptions{Channel: 1})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println(m.PA, m.Size)
		bufio.NewReader(os.Stdin).ReadString('\n')
		return 0
	}
	// mmap tries the mappings the driver tells apart and prints how each
	// one went.
	clients["mmap"] = func() int {
		d, err := runtime.Host{Root: "/"}.Open(0)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		own, err := d.Alloc(1<<20, runtime.AllocOptions{Channel: 1})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		owner := exec.Command(os.Args[0], "__client", "mmapowner")
		owner.Stderr = os.Stderr
		in, _ := owner.StdinPipe()
		out, _ := owner.StdoutPipe()
		if err := owner.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer owner.Wait()
		defer in.Close()
		var pa, size uint64
		if _, err := fmt.Fscan(bufio.NewReader(out), &pa, &size); err != nil {
			fmt.Fprintln(os.Stderr, "owner:", err)
			return 1
		}
		const rw = unix.PROT_READ | unix.PROT_WRITE
		try := func(off, length uint64, prot int) string {
			b, err := unix.Mmap(d.Fd(), int64(off), int(length), prot, unix.MAP_SHARED)
			if err != nil {
				return unix.ErrnoName(err.(unix.Errno))
			}
			unix.Munmap(b)
			return "ok"
		}
		fmt.Printf("own=%s own-part=%s raw=%s foreign-ro=%s foreign-rw=%s",
			try(own.PA, own.Size, rw),
			try(own.PA, 4096, rw),
			try(own.PA+1<<30, 4096, unix.PROT_READ),
			try(pa, size, unix.PROT_READ),
			try(pa, size, rw))
		// What the kernel refuses before the driver sees it keeps the
		// kernel's errno.
		ro, err := unix.Open("/dev/neuron0", unix.O_RDONLY, 0)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer unix.Close(ro)
		_, unaligned := unix.Mmap(d.Fd(), int64(own.PA+1), 4096, unix.PROT_READ, unix.MAP_SHARED)
		_, rdonly := unix.Mmap(ro, int64(own.PA), 4096, rw, unix.MAP_SHARED)
		fmt.Printf(" unaligned=%s rdonly-rw=%s", unix.ErrnoName(unaligned.(unix.Errno)), unix.ErrnoName(rdonly.(unix.Errno)))
		// Device mappings cannot grow (the driver's are VM_DONTEXPAND);
		// they can shrink.
		m, err := unix.Mmap(d.Fd(), int64(own.PA), int(own.Size), unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		grow, shrink := "ok", "ok"
		if _, err := unix.Mremap(m, 2*int(own.Size), unix.MREMAP_MAYMOVE); err != nil {
			grow = unix.ErrnoName(err.(unix.Errno))
		}
		if _, err := unix.Mremap(m, int(own.Size)/2, 0); err != nil {
			shrink = unix.ErrnoName(err.(unix.Errno))
		}
		fmt.Printf(" grow=%s shrink=%s\n", grow, shrink)
		return 0
	}
}

// Under run, mmaps of the device go through the supervisor, which fails
// those the driver fails: for a caller without CAP_SYS_RAWIO anything but
// a whole chunk or a special resource is EPERM. Another process's chunk
// the driver maps read-only; that cannot be emulated, so by default the
// mapping stays writable and --strict refuses it.
func TestRunChecksMmap(t *testing.T) {
	bin := clientCopy(t)
	// By default CMD runs with the caller's ids: root's capabilities for
	// root, none for anyone else (a run without root, rootless.go).
	own := "own=ok own-part=ok raw=ok"
	if os.Geteuid() != 0 {
		own = "own=ok own-part=EPERM raw=EPERM"
	}
	unprivileged := "own=ok own-part=EPERM raw=EPERM foreign-ro=ok foreign-rw=ok unaligned=EINVAL rdonly-rw=EACCES grow=EFAULT shrink=ok"
	cases := []struct {
		args, wrap []string
		want       string
	}{
		{nil, nil, own + " foreign-ro=ok foreign-rw=ok unaligned=EINVAL rdonly-rw=EACCES grow=EFAULT shrink=ok"},
		{[]string{"--strict"}, nil, own + " foreign-ro=ok foreign-rw=EACCES unaligned=EINVAL rdonly-rw=EACCES grow=EFAULT shrink=ok"},
		{[]string{"--uid=65534", "--gid=65534"}, nil, unprivileged},
	}
	if os.Geteuid() == 0 {
		// Root of a user namespace of its own holds CAP_SYS_RAWIO there,
		// not in the initial one the driver asks about.
		cases = append(cases, struct {
			args, wrap []string
			want       string
		}{nil, []string{"unshare", "-U", "-r"}, unprivileged})
	}
	for _, c := range cases {
		args := append(append(append(append([]string{"run"}, c.args...), "--"), c.wrap...), bin, "__client", "mmap")
		out, err := neuronfs(t, args...).Output()
		if err != nil {
			t.Fatalf("%v %v: %v\n%s", c.args, c.wrap, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != c.want {
			t.Errorf("run %v %v:\n got %s\nwant %s", c.args, c.wrap, got, c.want)
		}
	}
}
