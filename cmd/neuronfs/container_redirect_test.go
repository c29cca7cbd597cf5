package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// redirectScript writes attributes the way shell scripts do, by
// redirects (the shell opens, then moves the descriptor onto 1 or 3 with
// dup2), and reads back each effect at once: a builtin's read, cat, and
// a descriptor kept open by exec.
const redirectScript = `set -e
d=/sys/class/neuron_device/neuron0/info/notify_delay
f=$NEURONFS_CONTROL/faults
echo "delay $(cat $d)"
echo 0 > $d
read -r v < $d
echo "delay $v"
echo reset-fail > $f
echo "faults $(cat $f)"
echo no-such-fault > $f || echo "refused"
grep -q 'last write rejected' $f && echo "faults rejected"
echo none > $f
echo "faults $(cat $f)"
exec 3> $d
echo -1 >&3
echo "delay $(cat $d)"
echo 0 >&3
exec 3>&-
echo "delay $(cat $d)"
`

// Under the filter host view a shell's `echo 1 > ATTR` reaches the
// attribute's store, as on a host with the driver: the descriptor the
// shell moves below the filter's range becomes a pipe the daemon applies
// (internal/chardev/attrpipe.go), and what the script reads next sees
// the write. A rejected store cannot fail the pipe's write (the faults
// file says it was rejected): docs/mount-run.md.
func TestRunShellRedirect(t *testing.T) {
	// The filter view needs nothing but seccomp: nothing to skip for.
	shells := map[string][]string{"sh": {"sh"}, "busybox": {"busybox", "sh"}}
	for name, sh := range shells {
		t.Run(name, func(t *testing.T) {
			path, err := exec.LookPath(sh[0])
			if err != nil {
				t.Fatalf("%s is needed for this test (Debian: dash, busybox-static): %v", sh[0], err)
			}
			args := append([]string{"run", "--host-view=filter", "--instance", "trn2.3xlarge", "--", path}, sh[1:]...)
			cmd := exec.Command(os.Args[0], append(args, "-c", redirectScript)...)
			cmd.Env = append(os.Environ(), "NEURONFS_AS_MAIN=1")
			cmd.Stderr = os.Stderr
			out, err := cmd.Output()
			want := strings.Join([]string{"delay -1", "delay 0", "faults reset-fail", "faults rejected",
				"faults none", "delay -1", "delay 0"}, "\n") + "\n"
			if err != nil || string(out) != want {
				t.Fatalf("%v: got\n%s\nwant\n%s", err, out, want)
			}
		})
	}
}
