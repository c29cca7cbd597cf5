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

// Buffers sized by a count member are followed with their whole length.
func TestCountedBuffers(t *testing.T) {
	_, s, _ := ForCommand(ioctl.Default(), ioctl.CmdDMACopyDescriptors64)
	arg := make([]byte, s.Size)
	num, _ := s.Field("num_descs")
	PutUint(arg, num, 3)
	got := NestedBuffers(s, arg)
	if len(got) != 1 || got[0].Field.Name != "buffer" || got[0].Len != 48 || got[0].Field.Target != ioctl.TargetDescriptors {
		t.Fatalf("nested buffers %+v", got)
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

// DMA ring handles are memory handles; the async-copy wait handles are
// not; a pointer to a handle is a pointer whose buffer holds one.
func TestHandleMembers(t *testing.T) {
	_, qi, _ := ForCommand(ioctl.Default(), ioctl.CmdDMAQueueInit)
	_, ca, _ := ForCommand(ioctl.Default(), ioctl.CmdMemCopyAsync64)
	_, al, _ := ForCommand(ioctl.Default(), ioctl.CmdMemAllocV2)
	for _, c := range []struct {
		s    Struct
		name string
		want bool
	}{{qi, "tx_handle", true}, {qi, "rxc_handle", true}, {ca, "src_mem_handle", true}, {ca, "wait_handle", false}, {ca, "pwait_handle", false}, {al, "mem_handle", false}} {
		f, ok := c.s.Field(c.name)
		if !ok || f.Handle() != c.want {
			t.Errorf("%s.%s: Handle() = %v", c.s.Name, c.name, f.Handle())
		}
	}
	if f, _ := al.Field("mem_handle"); !f.Pointer() || f.Target != ioctl.TargetHandle || f.Pointee != 8 {
		t.Errorf("MEM_ALLOC_V2 mem_handle: %+v", f)
	}
}
