package fs_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/neuronfs/neuronfs/fs/testutil"
)

// expectedDeviceTree lists, from the driver's sysfs tree as its source
// builds it (docs/driver-facts.md), every file under one device's
// directory with its mode and the format of its content, for a device of
// the given core count. It is written out independently of the daemon's
// own tables on purpose.
func expectedDeviceTree(cores int) map[string]struct {
	mode   os.FileMode
	format *regexp.Regexp
} {
	type spec = struct {
		mode   os.FileMode
		format *regexp.Regexp
	}
	counter := regexp.MustCompile(`^[0-9]+\n$`)
	word := regexp.MustCompile(`^[A-Za-z0-9]+\n$`)
	out := map[string]spec{
		// The standard attributes of every device.
		"dev": {0o444, regexp.MustCompile(`^[0-9]+:[0-9]+
$`)},
		"uevent": {0o644, regexp.MustCompile(`^MAJOR=[0-9]+
MINOR=[0-9]+
DEVNAME=neuron[0-9]+
$`)},
		"reset":                                         {0o600, regexp.MustCompile(`^[012]\n$`)},
		"core_count":                                    {0o400, regexp.MustCompile(`^[0-9]+$`)},
		"connected_devices":                             {0o400, regexp.MustCompile(`^([0-9]+(, [0-9]+)*)?\n$`)},
		"info/notify_delay":                             {0o644, regexp.MustCompile(`^(-1|0)\n$`)},
		"info/serial_number":                            {0o644, regexp.MustCompile(`^([0-9a-f]{16})?\n$`)},
		"info/architecture/arch_type":                   {0o644, word},
		"info/architecture/instance_type":               {0o644, word},
		"info/architecture/device_name":                 {0o644, word},
		"stats/hardware/sram_ecc_uncorrected":           {0o644, counter},
		"stats/hardware/mem_ecc_uncorrected":            {0o644, counter},
		"stats/hardware/mem_ecc_repairable_uncorrected": {0o644, counter},
		// The runtime-PM files the kernel gives every device; a class
		// device without a driver's runtime PM has no autosuspend delay
		// (its reads fail, format nil).
		"power/autosuspend_delay_ms":   {0o644, nil},
		"power/control":                {0o644, regexp.MustCompile(`^auto\n$`)},
		"power/runtime_active_time":    {0o444, regexp.MustCompile(`^0\n$`)},
		"power/runtime_status":         {0o444, regexp.MustCompile(`^unsupported\n$`)},
		"power/runtime_suspended_time": {0o444, regexp.MustCompile(`^0\n$`)},
		"stats/power/utilization":      {0o644, regexp.MustCompile(`^POWER_STATUS_(VALID|NO_DATA|INVALID),[0-9]+,[0-9]+\.[0-9]{2},[0-9]+\.[0-9]{2},[0-9]+\.[0-9]{2}\n$`)},
	}
	add := func(dir string, leaves ...string) {
		for _, l := range leaves {
			out[dir+"/"+l] = spec{0o644, counter}
		}
	}
	for _, cat := range []string{"dma_buffers", "tensors", "constants", "application_memory", "driver_memory", "notifications", "dma_rings", "uncategorized"} {
		add("stats/memory_usage/host_mem/"+cat, "total", "present", "peak")
	}
	status := []string{"success", "failure", "timeout", "exec_bad_input", "hw_error", "execute_completed_with_error",
		"execute_completed_with_num_error", "generic_error", "resource_error", "resource_nc_error", "execute_failed_to_queue",
		"invalid_error", "unsupported_neff_version", "oob_error", "hw_collectives_error", "hw_hbm_ue_error", "hw_nc_ue_error",
		"hw_dma_abort_error", "execute_sw_nq_overflow", "execute_sw_semaphore_error", "execute_sw_event_error",
		"execute_sw_psum_collision", "execute_sw_sequencer_fatal", "hw_repairable_hbm_ue_error"}
	deviceMem := []string{"model_code", "tensors", "constants", "model_shared_scratchpad", "runtime_memory", "driver_memory",
		"collectives", "nonshared_scratchpad", "notifications", "dma_rings", "uncategorized"}
	for c := range cores {
		nc := fmt.Sprintf("neuron_core%d", c)
		out[nc+"/info/architecture/arch_type"] = spec{0o644, word}
		for _, s := range status {
			add(nc+"/stats/status/"+s, "total", "present")
		}
		add(nc+"/stats/memory_usage/host_mem", "total", "present", "peak")
		add(nc+"/stats/memory_usage/device_mem", "total", "present", "peak")
		for _, m := range deviceMem {
			add(nc+"/stats/memory_usage/device_mem/"+m, "total", "present", "peak")
		}
		for _, o := range []string{"model_load_count", "reset_req_count", "reset_fail_count", "inference_count", "flop_count", "nc_time_in_use"} {
			add(nc+"/stats/other_info/"+o, "total", "present")
		}
		out[nc+"/stats/tensor_engine/pe_cntrs"] = spec{0o644, regexp.MustCompile(`^xrow_grp,mm_active,wl_active,idle\n([0-3],[0-9]+,[0-9]+,[0-9]+\n){4}$`)}
	}
	return out
}

// Every file of the driver's tree exists with its mode and format, and
// no other, for each architecture.
func TestSysfsTreeComplete(t *testing.T) {
	for _, tc := range []struct {
		inst  string
		cores int
	}{{"trn1.2xlarge", 2}, {"trn2.48xlarge", 8}, {"trn3.48xlarge", 8}} {
		t.Run(tc.inst, func(t *testing.T) {
			dir, _ := testutil.Mount(t, tc.inst)
			base := dir + "/sys/devices/virtual/neuron_device/neuron0"
			want := expectedDeviceTree(tc.cores)
			var extra []string
			seen := map[string]bool{}
			err := filepath.WalkDir(base, func(p string, e fs.DirEntry, err error) error {
				if err != nil || e.IsDir() || e.Type()&fs.ModeSymlink != 0 {
					return err
				}
				rel := strings.TrimPrefix(p, base+"/")
				w, ok := want[rel]
				if !ok {
					extra = append(extra, rel)
					return nil
				}
				seen[rel] = true
				info, err := e.Info()
				if err != nil {
					return err
				}
				if info.Mode().Perm() != w.mode {
					t.Errorf("%s: mode %v, want %v", rel, info.Mode().Perm(), w.mode)
				}
				b, err := os.ReadFile(p)
				if w.format == nil {
					if !errors.Is(err, syscall.EIO) {
						t.Errorf("%s: read %q, %v; want EIO", rel, b, err)
					}
					return nil
				}
				if err != nil {
					t.Errorf("%s: %v", rel, err)
					return nil
				}
				if !w.format.Match(b) {
					t.Errorf("%s: content %q does not match %s", rel, b, w.format)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			var missing []string
			for p := range want {
				if !seen[p] {
					missing = append(missing, p)
				}
			}
			sort.Strings(missing)
			sort.Strings(extra)
			if len(missing) > 0 {
				t.Errorf("%d files missing, e.g. %v", len(missing), missing[:min(5, len(missing))])
			}
			if len(extra) > 0 {
				t.Errorf("%d files the driver does not have: %v", len(extra), extra[:min(10, len(extra))])
			}
		})
	}
}
