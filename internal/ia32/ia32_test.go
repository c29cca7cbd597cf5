package ia32

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// The 32-bit getpid answers this process's id, as the 64-bit one does.
// Run in a child: without IA32 emulation int $0x80 kills the caller.
func TestGetpid(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("int $0x80 needs x86_64")
	}
	if os.Getenv("IA32_CHILD") == "1" {
		if pid, errno := Syscall(SysGetpid, 0, 0, 0); errno != 0 || int(pid) != os.Getpid() {
			t.Fatalf("i386 getpid: %d %v, want %d", pid, errno, os.Getpid())
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestGetpid$")
	cmd.Env = append(os.Environ(), "IA32_CHILD=1")
	out, err := cmd.CombinedOutput()
	// int $0x80 kills the child, or the Go runtime, catching the fault in
	// its own code, ends it with status 2 naming SIGSEGV (seen on a
	// paravirtualised VM whose kernel has IA32 emulation).
	if ee, ok := err.(*exec.ExitError); ok && (ee.ExitCode() < 0 || ee.ExitCode() == 2 && strings.Contains(string(out), "signal SIGSEGV")) {
		t.Skipf("no 32-bit calls here (int $0x80 faulted in the child: %v)", err)
	}
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}
