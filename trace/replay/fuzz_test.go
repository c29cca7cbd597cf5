package replay

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/neuronfs/neuronfs/trace"
)

// FuzzReplay: whatever trace file parses, replaying its opens, closes,
// mmaps and munmaps opens nothing but the device nodes, creates and
// changes no file, and maps no more than the cap. The nodes are plain
// files in a directory of the fuzzer's own, accepted as nodes, so what a
// replay would do to the host it does there. (Ioctls need the emulator:
// the trace tests under run replay them.)
func FuzzReplay(f *testing.F) {
	head := `{"format":"neuronfs-trace/2","machine":"x86_64","start":"2026-01-01T00:00:00Z"}` + "\n"
	for _, body := range []string{
		`{"seq":1,"op":"open","tid":7,"tgid":7,"fd":3,"path":"NODES/neuron0","flags":524290,"ret":3}`,
		`{"seq":1,"op":"open","tid":7,"tgid":7,"fd":3,"path":"NODES/neuron1","flags":578,"ret":3}` + "\n" +
			`{"seq":2,"op":"mmap","tid":7,"tgid":7,"fd":3,"path":"NODES/neuron1","addr":4096,"len":8192,"prot":7,"mflags":32801}` + "\n" +
			`{"seq":3,"op":"munmap","tid":7,"tgid":7,"fd":-1,"addr":4096,"len":1073741824}` + "\n" +
			`{"seq":4,"op":"close","tid":7,"tgid":7,"fd":3,"path":"NODES/neuron1"}`,
		`{"seq":1,"op":"open","tid":7,"tgid":7,"fd":3,"path":"NODES/../victim","flags":578,"ret":3}`,
		`{"seq":1,"op":"open","tid":7,"tgid":7,"fd":3,"path":"NODES/neuron0/../victim","flags":65,"ret":3}`,
		`{"seq":1,"op":"open","tid":7,"tgid":7,"fd":3,"path":"NODES/neuron2","flags":65,"ret":3}`,
		`{"seq":1,"op":"open","tid":7,"tgid":7,"fd":3,"path":"NODES/../created","flags":65,"ret":3}`,
	} {
		f.Add([]byte(head + body + "\n"))
	}
	dir := f.TempDir()
	victim := filepath.Join(dir, "victim")
	content := []byte("root:secret:20000:0:99999:7:::\n")
	if err := os.WriteFile(victim, content, 0o600); err != nil {
		f.Fatal(err)
	}
	nodes := &nodePolicy{dir: filepath.Join(dir, "nodes"), verify: func(fd, minor int) error { return nil }}
	// What replay opens is checked before it is opened, so that a replay
	// that would open anything else fails here without doing it.
	const never = unix.O_CREAT | unix.O_TRUNC | unix.O_APPEND | unix.O_TMPFILE | unix.O_PATH
	if err := os.Mkdir(nodes.dir, 0o755); err != nil {
		f.Fatal(err)
	}
	allowed := map[string]bool{}
	for i := range 2 {
		p := filepath.Join(nodes.dir, "neuron"+strconv.Itoa(i))
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			f.Fatal(err)
		}
		allowed[p] = true
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := trace.Read(bytes.NewReader(bytes.ReplaceAll(data, []byte("NODES"), []byte(nodes.dir))))
		if err != nil {
			return
		}
		watched := *nodes
		watched.open = func(path string, flags int) (int, error) {
			n, ok := strings.CutPrefix(path, nodes.dir+"/neuron")
			if !ok || strings.Trim(n, "0123456789") != "" || n == "" || flags&never != 0 || flags&unix.O_NOFOLLOW == 0 {
				t.Fatalf("replay opens %q with flags %#x", path, flags)
			}
			return openNode(path, flags)
		}
		s := newState(tr, Options{nodes: &watched})
		defer func() {
			for k, m := range s.maps {
				sysMunmap(m.addr, m.len)
				delete(s.maps, k)
			}
			closeAll(s)
		}()
		for i := range tr.Records {
			r := &tr.Records[i]
			switch r.Op {
			case trace.OpOpen, trace.OpClose, trace.OpMmap, trace.OpMunmap:
			default:
				continue
			}
			if _, err := s.call(r); err != nil {
				t.Fatalf("seq %d: %v", r.Seq, err)
			}
			for k, fd := range s.fds {
				if p, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd)); err != nil || !allowed[p] {
					t.Fatalf("seq %d: fd %d (recorded %d) is %q (%v), not a node", r.Seq, fd, k.fd, p, err)
				}
			}
			for _, m := range s.maps {
				if m.len > maxMapLen {
					t.Fatalf("seq %d: a mapping of %#x bytes", r.Seq, m.len)
				}
			}
		}
		ents, err := os.ReadDir(dir)
		if err != nil || len(ents) != 2 {
			t.Fatalf("the fuzzer's directory holds %v (%v), want the victim and the nodes", ents, err)
		}
		if ents, err := os.ReadDir(nodes.dir); err != nil || len(ents) != 2 {
			t.Fatalf("the nodes' directory holds %v (%v)", ents, err)
		}
		for p := range allowed {
			if st, err := os.Stat(p); err != nil || st.Size() != 0 || st.Mode().Perm() != 0o600 {
				t.Fatalf("node %s changed: %v %v", p, st, err)
			}
		}
		if got, err := os.ReadFile(victim); err != nil || !bytes.Equal(got, content) {
			t.Fatalf("the victim holds %q (%v)", got, err)
		}
	})
}
