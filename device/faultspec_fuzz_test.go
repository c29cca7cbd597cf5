package device

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// formatFaults writes parsed items back as a fault list, each in its
// plainest form: -NAME for a clear, NAME for a switch on, NAME=V for a
// firmware value.
func formatFaults(items []faultItem) string {
	var out []string
	for _, it := range items {
		switch {
		case it.name == "none":
			out = append(out, "none")
		case it.name == faultCall && it.val == 0:
			out = append(out, "-"+faultCall+":"+strings.TrimPrefix(it.aim.macro.String(), "NEURON_IOCTL_"))
		case it.name == faultCall:
			out = append(out, it.aim.String())
		case it.name == faultHBMRepair:
			for name, v := range hbmRepairStates {
				if v == it.val {
					out = append(out, it.name+"="+name)
				}
			}
		case it.name == faultECCSRAM || it.name == faultECCHBM:
			out = append(out, fmt.Sprintf("%s=%d", it.name, it.val))
		case it.val == 0:
			out = append(out, "-"+it.name)
		default:
			out = append(out, it.name)
		}
	}
	return strings.Join(out, ",")
}

// FuzzFaultSpec: a fault list (the faults control file's writes and
// --inject, anyone's input under run) never panics the parser; what it
// accepts reads back the same once written plainly; CheckFaults agrees
// with it; and applying it leaves a status that, applied again after
// none, is the same status.
func FuzzFaultSpec(f *testing.F) {
	for _, seed := range []string{
		"", "none", "reset-fail,dma-abort", "-dma-stall", "ecc-hbm=0", "hbm-repair=0", "power-invalid=1",
		"dma-stall,ecc-hbm=2,ecc-sram=1,hbm-repair=failed", " none \n", "-ecc-hbm=0", "ecc-hbm=70000",
		"alloc-fail=0,fwio-fail", "hbm-repair=pending,,", "=", "-", "-none", "none=1",
		"fail:MEM_ALLOC:ENOMEM:3", "fail:mem_alloc_v2:eio:2+,-fail:MEM_ALLOC", "fail:MEM_FREE:EFAULT:12.5%:9",
		"fail:DEVICE_BASIC_INFO:ENOTSUPP:0.01%:18446744073709551615", "fail:MEM_ALLOC:ENOMEM:1.5%:", "fail:X", "-fail:",
	} {
		f.Add(seed)
	}
	sys, err := NewSystem(Config{Instance: "trn1.2xlarge"})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(sys.Close)
	f.Fuzz(func(t *testing.T, spec string) {
		items, err := parseFaults(spec)
		if cerr := CheckFaults(spec); (cerr == nil) != (err == nil) {
			t.Fatalf("CheckFaults(%q) = %v, parseFaults %v", spec, cerr, err)
		}
		if err != nil {
			if aerr := sys.Faults().Apply(spec); aerr == nil {
				t.Fatalf("Apply(%q) took a list the parser refuses (%v)", spec, err)
			}
			return
		}
		plain := formatFaults(items)
		again, err := parseFaults(plain)
		if err != nil {
			t.Fatalf("%q written as %q does not parse: %v", spec, plain, err)
		}
		if !slices.Equal(items, again) {
			t.Fatalf("%q: %v, written as %q: %v", spec, items, plain, again)
		}
		if err := sys.Faults().Apply(spec); err != nil {
			t.Fatalf("Apply(%q): %v", spec, err)
		}
		status, _, _ := strings.Cut(sys.faults.status(), "\n")
		if err := sys.Faults().Apply("none," + status); err != nil {
			t.Fatalf("the status %q of %q does not apply: %v", status, spec, err)
		}
		if again, _, _ := strings.Cut(sys.faults.status(), "\n"); again != status {
			t.Fatalf("%q: status %q, applied again after none: %q", spec, status, again)
		}
	})
}
