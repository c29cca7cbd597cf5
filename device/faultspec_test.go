package device

import (
	"strings"
	"syscall"
	"testing"
)

// faultsFile returns the faults control file of s.
func faultsFile(t *testing.T, s *System) Attr {
	t.Helper()
	for _, a := range s.Sysfs().ControlAttributes() {
		if a.Path == "faults" {
			return a
		}
	}
	t.Fatal("no faults control file")
	return Attr{}
}

// The faults file does what the README says: none clears every fault
// (the ECC readings too), -NAME or NAME=0 clears one, a list with a
// mistake changes nothing and its reason is on the next read.
func TestFaultsFile(t *testing.T) {
	s := newTestSystem(t, "trn1.2xlarge")
	f := faultsFile(t, s)
	for _, c := range []struct {
		write string
		errno syscall.Errno
		read  string // the first line read back
	}{
		{"dma-stall,ecc-hbm=2,ecc-sram=1,hbm-repair=failed", 0, "dma-stall,ecc-sram=1,ecc-hbm=2,hbm-repair=failed"},
		{"none", 0, "none"},
		{"alloc-fail,fwio-fail,ecc-hbm=2", 0, "alloc-fail,fwio-fail,ecc-hbm=2"},
		{"-ecc-hbm", 0, "alloc-fail,fwio-fail"},
		{"alloc-fail=0", 0, "fwio-fail"},
		{"-fwio-fail,ecc-sram=4", 0, "ecc-sram=4"},
		{"ecc-sram=0,reset-fail=1", 0, "reset-fail"},
		{"hbm-repair=pending", 0, "reset-fail,hbm-repair=pending"},
		{"-hbm-repair", 0, "reset-fail"},
		// A mistake anywhere changes nothing.
		{"none,bogus", syscall.EINVAL, "reset-fail"},
		{"ecc-hbm", syscall.EINVAL, "reset-fail"},
		{"ecc-hbm=70000", syscall.EINVAL, "reset-fail"},
		{"-ecc-hbm=0", syscall.EINVAL, "reset-fail"},
		{"dma-stall=yes", syscall.EINVAL, "reset-fail"},
		{"hbm-repair=fixed", syscall.EINVAL, "reset-fail"},
		{" none \n", 0, "none"},
	} {
		if got := f.Store([]byte(c.write)); got != c.errno {
			t.Errorf("write %q: errno %v, want %v", c.write, got, c.errno)
		}
		lines := strings.Split(strings.TrimSuffix(f.Show(), "\n"), "\n")
		if lines[0] != c.read {
			t.Errorf("after %q the file reads %q, want %q first", c.write, lines, c.read)
		}
		// The reason for a refusal follows, until a write is accepted.
		if c.errno == 0 && len(lines) != 1 {
			t.Errorf("after %q the file reads %q, want one line", c.write, lines)
		}
		if c.errno != 0 && (len(lines) != 2 || !strings.HasPrefix(lines[1], "# last write rejected: ")) {
			t.Errorf("after the refused %q the file reads %q, want the reason on a second line", c.write, lines)
		}
	}
}

func TestCheckFaults(t *testing.T) {
	for spec, ok := range map[string]bool{
		"": true, "none": true, "reset-fail,dma-abort": true, "-dma-stall": true, "ecc-hbm=0": true,
		"hbm-repair=0": true, "power-invalid=1": true,
		"bogus": false, "ecc-sram": false, "-bogus": false, "ecc-sram=-1": false, "reset-fail=2": false,
	} {
		if err := CheckFaults(spec); (err == nil) != ok {
			t.Errorf("CheckFaults(%q) = %v", spec, err)
		}
	}
	if err := CheckFaults("bogus"); !strings.Contains(err.Error(), `unknown fault "bogus"`) || !strings.Contains(err.Error(), "none clears all") {
		t.Errorf("unknown fault reads %q", err)
	}
}
