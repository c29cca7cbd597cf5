package device

import (
	"context"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/neuronfs/neuronfs/ioctl"
)

// basicInfo asks DEVICE_BASIC_INFO n times on f and returns each call's
// errno (0 for an answer).
func basicInfo(t *testing.T, f *File, n int) []syscall.Errno {
	t.Helper()
	var out []syscall.Errno
	for range n {
		res, v := call(t, context.Background(), f, 10, ioctl.CmdDeviceBasicInfo, ioctl.DeviceBasicInfo{})
		switch {
		case res < 0:
			out = append(out, syscall.Errno(-res))
		case v.Architecture == 0:
			t.Fatal("DEVICE_BASIC_INFO answered without an architecture")
		default:
			out = append(out, 0)
		}
	}
	return out
}

// An aimed fault fails the N-th call of its command only (or the N-th on,
// with N+), counted from when it is set; other commands never count.
func TestCallFaultNth(t *testing.T) {
	s := newTestSystem(t, "trn1.2xlarge")
	f := open(t, s.Devices[0], syscall.O_RDWR, 10)
	for _, c := range []struct {
		spec string
		want []syscall.Errno
	}{
		{"fail:DEVICE_BASIC_INFO:ENOMEM:3", []syscall.Errno{0, 0, syscall.ENOMEM, 0, 0}},
		{"fail:neuron_ioctl_device_basic_info:EIO:2+", []syscall.Errno{0, syscall.EIO, syscall.EIO, syscall.EIO}},
		{"fail:DEVICE_BASIC_INFO:EBUSY:1,-fail:DEVICE_BASIC_INFO", []syscall.Errno{0, 0}},
		{"fail:MEM_ALLOC:ENOMEM:1", []syscall.Errno{0, 0}},
		{"fail:DEVICE_BASIC_INFO:ENOTSUPP:1,none", []syscall.Errno{0}},
	} {
		if err := s.Faults().Apply(c.spec); err != nil {
			t.Fatalf("%q: %v", c.spec, err)
		}
		got := basicInfo(t, f, len(c.want))
		if !slices.Equal(got, c.want) {
			t.Errorf("%q: calls end %v, want %v", c.spec, got, c.want)
		}
		s.Faults().Apply("none")
	}
}

// The same seed fails the same calls on two hosts, whatever other
// commands run between them; another seed fails others.
func TestCallFaultSeeded(t *testing.T) {
	const calls = 200
	run := func(spec string, interleave bool) []syscall.Errno {
		s := newTestSystem(t, "trn1.2xlarge")
		if err := s.Faults().Apply(spec); err != nil {
			t.Fatal(err)
		}
		f := open(t, s.Devices[0], syscall.O_RDWR, 10)
		var out []syscall.Errno
		for range calls {
			if interleave {
				call(t, context.Background(), f, 10, ioctl.CmdDeviceInfo, ioctl.DeviceInfo{})
			}
			out = append(out, basicInfo(t, f, 1)...)
		}
		return out
	}
	a := run("fail:DEVICE_BASIC_INFO:EIO:30%:42", false)
	b := run("fail:DEVICE_BASIC_INFO:EIO:30%:42", true)
	if !slices.Equal(a, b) {
		t.Errorf("seed 42 on two hosts:\n%v\n%v", a, b)
	}
	failed := 0
	for _, e := range a {
		if e != 0 && e != syscall.EIO {
			t.Fatalf("a call failed with %v, want EIO", e)
		}
		if e != 0 {
			failed++
		}
	}
	// Deterministic: the draws of seed 42 are fixed; 30% of 200 is 60.
	if failed < 40 || failed > 80 {
		t.Errorf("%d of %d calls failed at 30%%", failed, calls)
	}
	if c := run("fail:DEVICE_BASIC_INFO:EIO:30%:43", false); slices.Equal(a, c) {
		t.Error("seeds 42 and 43 failed the same calls")
	}
	if all := run("fail:DEVICE_BASIC_INFO:EIO:100%:7", false); slices.Contains(all, 0) {
		t.Errorf("at 100%% some calls passed: %v", all)
	}
}

// Aimed faults read back in their plainest form; a mistake is one line
// naming the item.
func TestCallFaultSpec(t *testing.T) {
	s := newTestSystem(t, "trn1.2xlarge")
	ff := faultsFile(t, s)
	for write, read := range map[string]string{
		"fail:mem_alloc:enomem:03":                                   "fail:MEM_ALLOC:ENOMEM:3",
		"reset-fail,fail:NEURON_IOCTL_MEM_ALLOC_V2:EIO:1+":           "reset-fail,fail:MEM_ALLOC_V2:EIO:1+",
		"fail:MEM_FREE:EFAULT:12.5%:9,fail:MEM_ALLOC:eagain:0.05%:0": "fail:MEM_ALLOC:EAGAIN:0.05%:0,fail:MEM_FREE:EFAULT:12.5%:9",
		"fail:MEM_ALLOC:ENOMEM:1,fail:MEM_ALLOC:EIO:2":               "fail:MEM_ALLOC:EIO:2",
	} {
		ff.Store([]byte("none"))
		if e := ff.Store([]byte(write)); e != 0 {
			t.Errorf("write %q: %v", write, e)
		}
		if got, _, _ := strings.Cut(ff.Show(), "\n"); got != read {
			t.Errorf("after %q the file reads %q, want %q", write, got, read)
		}
	}
	for spec, why := range map[string]string{
		"fail:NO_SUCH_THING:ENOMEM:1":    `no ioctl named "NO_SUCH_THING"`,
		"fail::ENOMEM:1":                 `no ioctl named ""`,
		"fail:MEM_ALLOC:ENOPE:1":         `"ENOPE" is not an errno name`,
		"fail:MEM_ALLOC:ENOMEM:0":        "N from 1",
		"fail:MEM_ALLOC:ENOMEM:x":        "N from 1",
		"fail:MEM_ALLOC:ENOMEM":          "want fail:CMD:ERRNO:N",
		"fail:MEM_ALLOC:ENOMEM:0%:1":     "from 0.01% to 100%",
		"fail:MEM_ALLOC:ENOMEM:101%:1":   "from 0.01% to 100%",
		"fail:MEM_ALLOC:ENOMEM:1.234%:1": "from 0.01% to 100%",
		"fail:MEM_ALLOC:ENOMEM:25:1":     "from 0.01% to 100%",
		"fail:MEM_ALLOC:ENOMEM:25%:-1":   "want a seed",
		"-fail:MEM_ALLOC:ENOMEM":         "say -fail:MEM_ALLOC",
	} {
		err := CheckFaults(spec)
		if err == nil || !strings.Contains(err.Error(), why) || strings.Contains(err.Error(), "\n") {
			t.Errorf("CheckFaults(%q) = %v, want one line saying %q", spec, err, why)
		}
	}
}

// CallFault writes the items the parser reads.
func TestCallFaultString(t *testing.T) {
	for c, want := range map[CallFault]string{
		{Command: "MEM_ALLOC", Errno: syscall.ENOMEM, Nth: 3}:                         "fail:MEM_ALLOC:ENOMEM:3",
		{Command: "neuron_ioctl_mem_alloc", Errno: syscall.EIO, Nth: 2, Repeat: true}: "fail:MEM_ALLOC:EIO:2+",
		{Command: "MEM_FREE", Errno: syscall.EFAULT, Percent: 12.5, Seed: 9}:          "fail:MEM_FREE:EFAULT:12.5%:9",
	} {
		if got := c.String(); got != want {
			t.Errorf("%+v: %q, want %q", c, got, want)
		}
		if err := CheckFaults(c.String()); err != nil {
			t.Errorf("%q: %v", c.String(), err)
		}
	}
}
