package fs_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/ioctl"
	"github.com/neuronfs/neuronfs/runtime"
)

// BenchmarkRoundTrip: small ioctls against the bare go-fuse no-op,
// interleaved (see interleave), issued from this process and from a
// separate client process, as a runtime would issue them.
func BenchmarkRoundTrip(b *testing.B) {
	for _, op := range []string{"DEVICE_BASIC_INFO", "MEM_BUF_COPY64-4KiB"} {
		b.Run("op="+op+"/client=same-process", func(b *testing.B) {
			noop := noopIoctl(b)
			dir, _ := testutil.Mount(b, "trn2.48xlarge")
			subject, done, err := roundTripOp(dir, op)
			if err != nil {
				b.Fatal(err)
			}
			defer done()
			interleave(b.N, noop, clocked(subject)).report(b)
		})
		b.Run("op="+op+"/client=other-process", func(b *testing.B) {
			noopPath := bareGoFuseMount(b)
			dir, _ := testutil.Mount(b, "trn2.48xlarge")
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "NEURONFS_TEST_HELPER=roundtrip",
				"NEURONFS_NOOP="+noopPath, "NEURONFS_ROOT="+dir, "NEURONFS_OP="+op, "NEURONFS_N="+strconv.Itoa(b.N))
			cmd.Stderr = os.Stderr
			out, err := cmd.Output()
			if err != nil {
				b.Fatalf("client: %v", err)
			}
			var r pairRun
			if err := json.Unmarshal(out, &r); err != nil {
				b.Fatalf("client said %q: %v", out, err)
			}
			r.report(b)
		})
	}
}

// roundTripOp opens device 0 under dir and returns one op of the named
// kind, checking its result.
func roundTripOp(dir, op string) (func(), func(), error) {
	d, err := runtime.Host{Root: dir}.Open(0)
	if err != nil {
		return nil, nil, err
	}
	switch op {
	case "DEVICE_BASIC_INFO":
		var bi ioctl.DeviceBasicInfo
		fd := d.Fd()
		return func() {
			if _, e := testutil.Ioctl(fd, ioctl.CmdDeviceBasicInfo, &bi); e != 0 || bi.Architecture == 0 {
				panic(fmt.Sprintf("DEVICE_BASIC_INFO: %v", e))
			}
		}, func() { d.Close() }, nil
	case "MEM_BUF_COPY64-4KiB":
		m, err := d.Alloc(4096, runtime.AllocOptions{Channel: 1})
		if err != nil {
			d.Close()
			return nil, nil, err
		}
		src := make([]byte, 4096)
		for i := range src {
			src[i] = byte(i)
		}
		return func() {
			if err := m.Write(0, src); err != nil {
				panic(err)
			}
		}, func() { d.Close() }, nil
	}
	d.Close()
	return nil, nil, fmt.Errorf("unknown op %q", op)
}

var _ = func() bool {
	helpers["roundtrip"] = func() int {
		fd, err := unix.Open(os.Getenv("NEURONFS_NOOP"), unix.O_RDWR, 0)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		var bi ioctl.DeviceBasicInfo
		noop := func() { testutil.Ioctl(fd, ioctl.CmdDeviceBasicInfo, &bi) }
		subject, done, err := roundTripOp(os.Getenv("NEURONFS_ROOT"), os.Getenv("NEURONFS_OP"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer done()
		n, _ := strconv.Atoi(os.Getenv("NEURONFS_N"))
		if err := json.NewEncoder(os.Stdout).Encode(interleave(n, noop, clocked(subject))); err != nil {
			return 1
		}
		return 0
	}
	return true
}()
