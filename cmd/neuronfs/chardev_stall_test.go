package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

func init() {
	// fuselookup serves a FUSE file system whose lookups open a file of
	// their own before answering, and opens a file in it: under run, the
	// supervisor resolving the outer open waits for the lookup, and the
	// lookup waits for its own open to be answered. Prints "ok" once the
	// outer open returned, "stalled" if it did not within 30 s.
	clients["fuselookup"] = func() int {
		dir, err := os.MkdirTemp("", "fuselookup-")
		if err != nil {
			fmt.Println(err)
			return 1
		}
		defer os.Remove(dir)
		server, err := gofs.Mount(dir, &lookupOpener{}, &gofs.Options{MountOptions: fuse.MountOptions{DirectMount: true}})
		if err != nil {
			fmt.Println("mount:", err)
			return 1
		}
		defer server.Unmount()
		done := make(chan error, 1)
		go func() {
			f, err := os.Open(filepath.Join(dir, "file"))
			if err == nil {
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil {
				fmt.Println(err)
				return 1
			}
			fmt.Println("ok")
			return 0
		case <-time.After(30 * time.Second):
			fmt.Println("stalled")
			return 1
		}
	}
}

// lookupOpener is a directory whose lookups open os.Args[0] before they
// answer, and which has one file, "file".
type lookupOpener struct{ gofs.Inode }

func (n *lookupOpener) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	f, err := os.Open(os.Args[0])
	if err != nil {
		return nil, syscall.EIO
	}
	f.Close()
	if name != "file" {
		return nil, syscall.ENOENT
	}
	return n.NewInode(ctx, &gofs.MemRegularFile{Data: []byte("x")}, gofs.StableAttr{Mode: syscall.S_IFREG}), 0
}

// The supervisor decides an open on one thread; a decision that waits
// (here: a path lookup on a FUSE file system served by a filtered process
// that is itself waiting for an open to be answered) must not stop every
// other notification for good.
func TestRunSupervisorLookupWaitsForAnOpen(t *testing.T) {
	testutilRequireFUSE(t)
	bin := clientCopy(t)
	// As root whoever called the suite (sudo passes its caller's uid to
	// run): the client mounts a FUSE file system.
	out, err := neuronfs(t, "run", "--instance=trn1.2xlarge", "--uid=0", "--gid=0", "--", bin, "__client", "fuselookup").Output()
	if got := strings.TrimSpace(string(out)); err != nil || got != "ok" {
		t.Fatalf("run fuselookup: %v, printed %q", err, got)
	}
}
