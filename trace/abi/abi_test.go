package abi

import (
	"reflect"
	"testing"

	"github.com/neuronfs/neuronfs/ioctl"
)

// Every member the table lists agrees with ioctl's Go mirror of the same
// struct, and every command with a layout has its table size.
func TestFieldsMatchIoctlMirrors(t *testing.T) {
	tab := ioctl.Default()
	checked := 0
	for _, c := range tab.Commands() {
		_, s, ok := ForCommand(tab, c.Cmd)
		if !ok {
			t.Fatalf("%s: not found", c.Name)
		}
		if c.ArgType == nil || c.ArgType.Kind() != reflect.Struct {
			continue
		}
		if s.Size != int(c.ArgType.Size()) {
			t.Errorf("%s: size %d, Go mirror %d", c.Name, s.Size, c.ArgType.Size())
		}
		offsets := map[uintptr]bool{}
		for i := 0; i < c.ArgType.NumField(); i++ {
			if f := c.ArgType.Field(i); f.Name != "_" {
				offsets[f.Offset] = true
			}
		}
		for _, f := range s.Fields {
			if f.Size > 0 && !offsets[uintptr(f.Offset)] {
				t.Errorf("%s: member %s at %d has no Go field there", c.Name, f.Name, f.Offset)
			}
		}
		checked++
	}
	if checked < 60 {
		t.Fatalf("only %d struct commands checked", checked)
	}
}

func TestNestedBuffers(t *testing.T) {
	tab := ioctl.Default()
	_, s, _ := ForCommand(tab, ioctl.CmdMemAllocV2MT64)
	n := NestedBuffers(s, make([]byte, s.Size))
	if len(n) != 1 || n[0].Field.Name != "mem_handle" || n[0].Len != 8 {
		t.Fatalf("MEM_ALLOC_V2MT64 nested = %+v", n)
	}
	_, s, _ = ForCommand(tab, ioctl.CmdMemBufCopy64)
	arg := make([]byte, s.Size)
	for _, f := range s.Fields {
		if f.Name == "size" {
			PutUint(arg, f, 1000)
		}
	}
	n = NestedBuffers(s, arg)
	if len(n) != 1 || n[0].Field.Name != "buffer" || n[0].Len != 1000 || n[0].Capped != NestedCap {
		t.Fatalf("MEM_BUF_COPY64 nested = %+v", n)
	}
	_, s, _ = ForCommand(tab, ioctl.CmdDeviceAppPID)
	if s.Size != 4 || Format([]byte{0xff, 0xff, 0xff, 0xff}, s.Fields[0]) != "-1" {
		t.Fatalf("DEVICE_APP_PID layout %+v", s)
	}
}

// Arrays sized by a count member are followed with their whole length.
func TestArrayRules(t *testing.T) {
	s, ok := Lookup("neuron_ioctl_dma_copy_descriptors64")
	if !ok {
		t.Fatal("no struct")
	}
	arg := make([]byte, s.Size)
	for _, f := range s.Fields {
		if f.Name == "num_descs" {
			PutUint(arg, f, 3)
		}
	}
	got := NestedBuffers(s, arg)
	if len(got) != 1 || got[0].Field.Name != "buffer" || got[0].Len != 48 {
		t.Fatalf("nested buffers %+v", got)
	}
	for name, rules := range arrayRules {
		st, ok := Lookup(name)
		if !ok {
			t.Errorf("rule for unknown struct %s", name)
			continue
		}
		for field, rule := range rules {
			var hasField, hasCount bool
			for _, f := range st.Fields {
				hasField = hasField || (f.Name == field && f.Pointer())
				hasCount = hasCount || f.Name == rule.count
			}
			if !hasField || !hasCount {
				t.Errorf("%s: rule %s by %s names missing members", name, field, rule.count)
			}
		}
	}
}

// The 2.27.4.0 commands have layouts of the same size as their Go mirrors.
func TestLayouts2_27(t *testing.T) {
	tab, err := ioctl.ForVersion("2.27.4.0")
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []uint32{ioctl.CmdThrottlingNotifications, ioctl.CmdGetVAPlacement, ioctl.CmdGetPerformanceProfile,
		ioctl.CmdAvailablePerfProfiles, ioctl.CmdGetAsyncH2TDMAComplQueues} {
		c, s, ok := ForCommand(tab, cmd)
		if !ok || len(s.Fields) == 0 || s.Size != c.ArgSize || s.Size != int(c.ArgType.Size()) {
			t.Errorf("%#x: %+v (command %+v)", cmd, s, c)
			continue
		}
		last := s.Fields[len(s.Fields)-1]
		if last.Offset+last.Size > s.Size {
			t.Errorf("%s: %s runs past the struct", s.Name, last.Name)
		}
	}
}

// DMA ring handles are memory handles; the async-copy wait handles are not.
func TestHandleMembers(t *testing.T) {
	for name, want := range map[string]bool{"mem_handle": true, "src_mem_handle": true, "tx_handle": true, "rx_handle": true, "rxc_handle": true, "wait_handle": false, "pwait_handle": false} {
		if got := (Field{Name: name, CType: "__u64"}).Handle(); got != want {
			t.Errorf("%s: Handle() = %v", name, got)
		}
	}
	if (Field{Name: "mem_handle", CType: "__u64 *"}).Handle() {
		t.Error("a pointer to a handle is not a handle")
	}
}
