package spacefs

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/internal/testenv"
)

// victimEnv makes the test binary a daemon stand-in that starts a store
// server, prints its pid and waits to be killed.
const victimEnv = "NEURONFS_SPACEFS_VICTIM"

func TestMain(m *testing.M) {
	if dir := os.Getenv(victimEnv); dir != "" {
		s, err := Start(dir)
		if err != nil {
			os.Stdout.WriteString("error " + err.Error() + "\n")
			os.Exit(1)
		}
		fd, err := s.Create("neuron0", 1<<47)
		if err == nil {
			_, err = unix.Mmap(fd, 1<<46, 1<<21, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		}
		if err != nil {
			os.Stdout.WriteString("error " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Stdout.WriteString(strconv.Itoa(s.Pid()) + "\n")
		select {}
	}
	os.Exit(m.Run())
}

func startServer(t testing.TB) *Server {
	t.Helper()
	testenv.RequireFUSE(t)
	s, err := Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// The space is one file however often it is opened: two mappings at an
// address past ext4's largest file share their bytes at once, both ways,
// and agree with read and write; a punch zeroes what it covers.
func TestSpaceIsCoherentMemory(t *testing.T) {
	s := startServer(t)
	const span, pa = 0x808500000000, 0x8084c0000000
	fd1, err := s.Create("neuron0", span)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd1)
	fd2, err := s.Create("neuron0", span)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd2)
	var st unix.Stat_t
	if err := unix.Fstat(fd1, &st); err != nil || uint64(st.Size) != span {
		t.Fatalf("size %d, %v", st.Size, err)
	}
	m1, err := unix.Mmap(fd1, pa, 4<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m1)
	m2, err := unix.Mmap(fd2, pa, 4<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m2)
	copy(m1[100:], "written through one")
	copy(m2[3<<20:], "and the other")
	if string(m2[100:119]) != "written through one" || string(m1[3<<20:3<<20+13]) != "and the other" {
		t.Fatal("mappings of one space differ")
	}
	b := make([]byte, 13)
	if _, err := unix.Pread(fd1, b, pa+3<<20); err != nil || string(b) != "and the other" {
		t.Fatalf("pread %q %v", b, err)
	}
	if _, err := unix.Pwrite(fd2, []byte("pwrite"), pa+5); err != nil || string(m1[5:11]) != "pwrite" {
		t.Fatalf("pwrite not seen by the mapping: %q %v", m1[5:11], err)
	}
	// What the kernel writes back reaches the store.
	if err := unix.Msync(m1, unix.MS_SYNC); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fstat(fd1, &st); err != nil || st.Blocks == 0 {
		t.Fatalf("the store holds %d blocks after msync (%v)", st.Blocks, err)
	}
	if err := unix.Fallocate(fd1, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, pa, 2<<20); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(m2[:2<<20], make([]byte, 2<<20)) || string(m1[3<<20:3<<20+13]) != "and the other" {
		t.Fatal("punch did not zero exactly its range")
	}
	if err := unix.Fallocate(fd1, unix.FALLOC_FL_KEEP_SIZE, 0x10000, 1<<20); err != nil {
		t.Fatalf("reserve: %v", err)
	}
	// Another name is another space.
	fd3, err := s.Create("neuron1", span)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd3)
	if _, err := unix.Pread(fd3, b, pa+3<<20); err != nil || !bytes.Equal(b, make([]byte, 13)) {
		t.Fatalf("neuron1 reads %q (%v)", b, err)
	}
}

// The server's mount is in its own namespace: the host never sees it.
func TestServerMountIsPrivate(t *testing.T) {
	startServer(t)
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(mi), "neuronfs-space") {
		t.Fatalf("the store's mount is visible:\n%s", mi)
	}
}

// A daemon killed with a space mapped leaves no server behind, and its
// exit does not wait for it.
func TestServerEndsWithKilledDaemon(t *testing.T) {
	testenv.RequireFUSE(t)
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), victimEnv+"="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	buf := make([]byte, 256)
	n, _ := out.Read(buf)
	line := strings.TrimSpace(string(buf[:n]))
	pid, err := strconv.Atoi(line)
	if err != nil {
		t.Fatalf("victim said %q", line)
	}
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pidfd)
	cmd.Process.Signal(syscall.SIGKILL)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the killed daemon did not exit")
	}
	// The server sees its lifeline close and exits.
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, int(time.Minute/time.Millisecond))
		if err == unix.EINTR {
			continue
		}
		if n != 1 {
			unix.Kill(pid, unix.SIGKILL)
			t.Fatalf("the store server outlived its daemon: %d %v", n, err)
		}
		break
	}
}
