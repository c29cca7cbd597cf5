package chardev

import (
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
)

// An attribute pipe hands each write to the store as one call, in order
// (packet mode), settle returns only once every write made before it is
// applied, and the applier ends with its last writer.
func TestAttrPipeAppliesEachWrite(t *testing.T) {
	var mu sync.Mutex
	var got []string
	store := func(b []byte) unix.Errno {
		mu.Lock()
		got = append(got, string(b))
		mu.Unlock()
		if string(b) == "bad\n" {
			return unix.EINVAL
		}
		return 0
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_DIRECT|unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	if err := unix.SetNonblock(p[0], true); err != nil {
		t.Fatal(err)
	}
	var ps attrPipes
	ps.start(&attrPipe{r: os.NewFile(uintptr(p[0]), "attr-pipe"), store: store, log: logrus.NewEntry(logrus.StandardLogger())})
	page := strings.Repeat("x", pipeBuf)
	want := []string{"1\n", "bad\n", "0\n", page, "y"}
	for i, w := range []string{"1\n", "bad\n", "0\n", page + "y"} {
		if _, err := unix.Write(p[1], []byte(w)); err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			// Three writes made: settle sees all three applied.
			ps.settle()
			mu.Lock()
			applied := slices.Clone(got)
			mu.Unlock()
			if !slices.Equal(applied, want[:3]) {
				t.Fatalf("after settle: %q, want %q", applied, want[:3])
			}
		}
	}
	unix.Close(p[1])
	ps.wg.Wait() // the last writer gone: the applier ends by itself
	if ps.count.Load() != 0 {
		t.Fatalf("%d pipes still live", ps.count.Load())
	}
	// A write over a page is split as sysfs splits it: a page, then the rest.
	if !slices.Equal(got, want) {
		t.Fatalf("stores %q, want %q", got, want)
	}
	ps.stop()
}
