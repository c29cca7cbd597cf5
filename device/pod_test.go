package device

import (
	"context"
	"syscall"
	"testing"

	"github.com/neuronfs/neuronfs/ioctl"
)

func TestPodOnPodlessHosts(t *testing.T) {
	ctx := context.Background()
	for _, inst := range []string{"trn1.32xlarge", "trn2.48xlarge", "trn3.48xlarge"} {
		s := newTestSystem(t, inst)
		f := open(t, s.Devices[0], syscall.O_WRONLY, 100)

		res, info := call(t, ctx, f, 100, ioctl.CmdPodInfo, ioctl.PodInfo{Sz: 260, PodType: 9, PodSz: 9})
		if res != 0 || info.Sz != 260 || info.PodType != 0 || info.PodSz != 0 || info.PodID != [256]uint8{} {
			t.Errorf("%s POD_INFO: %d %+v", inst, res, info)
		}
		res, _ = call(t, ctx, f, 100, ioctl.CmdPodInfo, ioctl.PodInfo{Sz: 259})
		wantErrno(t, inst+" POD_INFO sz 259", res, syscall.EINVAL)

		res, st := call(t, ctx, f, 100, ioctl.CmdPodStatusV2, ioctl.PodStatusV2{V1: ioctl.PodStatus{Sz: 276}, Mode: 3})
		if res != 0 || st.V1.State != podStateSingleNode || st.V1.NodeID != -1 || st.Mode != 0 || st.ModesSupported != 0 {
			t.Errorf("%s POD_STATUS_V2: %d %+v", inst, res, st)
		}
		res, _ = call(t, ctx, f, 100, ioctl.CmdPodStatus, ioctl.PodStatus{Sz: 276})
		wantErrno(t, inst+" POD_STATUS with the V2 size", res, syscall.EINVAL)

		res, ctl := call(t, ctx, f, 100, ioctl.CmdPodCtrlV2, ioctl.PodCtrlV2{V1: ioctl.PodCtrl{Sz: 20, State: 77}})
		want := uint32(77) // V3/V4 standard: state comes back as passed
		if s.Arch.Arch == 2 {
			want = podStateSingleNode
		}
		if res != 0 || ctl.V1.State != want {
			t.Errorf("%s POD_CTRL_V2: %d state %d, want %d", inst, res, ctl.V1.State, want)
		}
		// The 2.19-era 12-byte POD_CTRL value is refused.
		res, _ = call(t, ctx, f, 100, ioctl.IOC(ioctl.DirRead|ioctl.DirWrite, ioctl.Magic, 123, 12), ioctl.PodCtrl{Sz: 12})
		wantErrno(t, inst+" old POD_CTRL", res, syscall.EINVAL)
	}
}
