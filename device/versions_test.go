package device

import (
	"context"
	"syscall"
	"testing"

	"github.com/neuronfs/neuronfs/ioctl"
)

func TestOlderDriverVersions(t *testing.T) {
	ctx := context.Background()
	sys, err := NewSystem(Config{Instance: "trn2.48xlarge", DriverVersion: "2.20.28.0"})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close()
	f := open(t, sys.Devices[0], syscall.O_RDWR, 100)
	_, cv := call(t, ctx, f, 100, ioctl.CmdCompatibleVersion, ioctl.CompatibleVersion{})
	if cv.Min != 10 || cv.Max != 10 {
		t.Errorf("2.20.28.0 Trn2 compat %+v, want 10..10", cv)
	}
	_, di := call(t, ctx, f, 100, ioctl.CmdDriverInfoGet, ioctl.DeviceDriverInfo{})
	if di.FeatureFlags1 != 0x7f {
		t.Errorf("2.20.28.0 features %#x", di.FeatureFlags1)
	}
	// Commands it did not have: the V2 pod commands, zero copy, metrics.
	res, _ := call(t, ctx, f, 100, ioctl.CmdPodCtrlV2, ioctl.PodCtrlV2{V1: ioctl.PodCtrl{Sz: 20}})
	wantErrno(t, "POD_CTRL_V2 on 2.20", res, syscall.EINVAL)
	res, _ = call(t, ctx, f, 100, ioctl.CmdPodCtrl, ioctl.PodCtrl{Sz: 16})
	wantErrno(t, "POD_CTRL on 2.20", res, 0)
	res, _ = call(t, ctx, f, 100, ioctl.CmdMemBufZerocopy64, ioctl.MemBufCopy64ZC{})
	wantErrno(t, "ZEROCOPY64 on 2.20", res, syscall.EINVAL)
	res, _ = call(t, ctx, f, 100, ioctl.CmdMetricsCtrl, ioctl.MetricsCtrl{})
	wantErrno(t, "METRICS_CTRL on 2.20", res, syscall.EINVAL)
	var version string
	for _, a := range sys.Sysfs().ModuleAttributes() {
		if a.Path == "version" {
			version = a.Show()
		}
	}
	if version != "2.20.28.0\n" {
		t.Errorf("module version %q", version)
	}
	if _, err := NewSystem(Config{Instance: "trn3.48xlarge", DriverVersion: "2.24.7.0"}); err == nil {
		t.Error("driver 2.24 accepted a Trn3 host")
	}
	v24, err := NewSystem(Config{Instance: "trn1.2xlarge", DriverVersion: "2.24.7.0"})
	if err != nil {
		t.Fatal(err)
	}
	defer v24.Close()
	g := open(t, v24.Devices[0], syscall.O_RDWR, 100)
	res, _ = call(t, ctx, g, 100, ioctl.CmdMemBufZerocopy64V2_24_7_0, ioctl.MemBufCopy64{})
	wantErrno(t, "2.24 zero copy (not emulated)", res, ioctl.ENOTSUPP)
	res, _ = call(t, ctx, g, 100, ioctl.CmdH2TDMAAllocQueues, ioctl.H2TDMAAllocQueues{})
	wantErrno(t, "H2T_DMA_ALLOC_QUEUES on 2.24", res, syscall.EINVAL)
}
