package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/trace"
)

// A trace comes with a bug report and replay runs as root: a trace that
// opens a root-only file with O_TRUNC, creates one, opens the device
// with O_CREAT|O_TRUNC and maps a terabyte with MAP_POPULATE replays the
// device's open and close, skips the rest saying why, and leaves the
// files as they were; on every kind of device node run makes.
func TestReplayUntrustedTrace(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "shadow")
	content := []byte("root:secret:20000:0:99999:7:::\n")
	if err := os.WriteFile(victim, content, 0o600); err != nil {
		t.Fatal(err)
	}
	created := filepath.Join(dir, "created")
	const evil = unix.O_RDWR | unix.O_CREAT | unix.O_TRUNC
	tr := &trace.Trace{
		Header: trace.Header{Instance: "trn2.3xlarge", Machine: "x86_64"},
		Records: []trace.Record{
			{Seq: 1, Op: trace.OpOpen, TID: 7, TGID: 7, FD: 3, Path: victim, Flags: evil, Ret: 3},
			{Seq: 2, Op: trace.OpOpen, TID: 7, TGID: 7, FD: 4, Path: created, Flags: evil, Ret: 4},
			{Seq: 3, Op: trace.OpOpen, TID: 7, TGID: 7, FD: 5, Path: "/dev/neuron0", Flags: evil | unix.O_CLOEXEC, Ret: 5},
			{Seq: 4, Op: trace.OpMmap, TID: 7, TGID: 7, FD: 5, Path: "/dev/neuron0", Addr: 0x7f0000000000, Len: 1 << 40,
				Prot: unix.PROT_READ | unix.PROT_WRITE, MFlags: unix.MAP_SHARED | unix.MAP_POPULATE},
			{Seq: 5, Op: trace.OpClose, TID: 7, TGID: 7, FD: 5, Path: "/dev/neuron0"},
		},
	}
	path := filepath.Join(dir, "evil.jsonl")
	writeTrace(t, path, tr)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	inside := []string{"--", self, replayCmd, "--strict=false", "--map-addresses=false", path}
	for name, args := range map[string][]string{
		"replay":                 {"replay", path},
		"run --no-chardev":       append([]string{"run", "--instance", "trn2.3xlarge", "--no-chardev"}, inside...),
		"run --device-fds=super": append([]string{"run", "--instance", "trn2.3xlarge", "--device-fds=supervisor"}, inside...),
	} {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			cmd := neuronfs(t, args...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				if _, ok := err.(*exec.ExitError); !ok {
					t.Fatal(err)
				}
				t.Errorf("replay: %v\n%s%s", err, stdout.String(), stderr.String())
			}
			table := stdout.String()
			got := rows(t, table)
			for seq, want := range map[string]string{"1": "skipped", "2": "skipped", "3": "match", "4": "skipped", "5": "match"} {
				if got[seq] != want {
					t.Errorf("call %s: %q, want %s\n%s", seq, got[seq], want, table)
				}
			}
			for _, why := range []string{
				"not an emulated device node (replay opens only /dev/neuronN)",
				"flags 0x240 (not passed",
				"length 0x10000000000 is over replay's cap",
			} {
				if !strings.Contains(table, why) {
					t.Errorf("the table does not say %q:\n%s", why, table)
				}
			}
			got2, err := os.ReadFile(victim)
			if err != nil || !bytes.Equal(got2, content) {
				t.Errorf("%s now holds %q (%v)", victim, got2, err)
			}
			if _, err := os.Lstat(created); !os.IsNotExist(err) {
				t.Errorf("replay created %s: %v", created, err)
			}
		})
	}
}
