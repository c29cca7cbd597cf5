package device

import (
	"syscall"
	"testing"

	"github.com/neuronfs/neuronfs/device/mempool"
)

func TestCheckMapping(t *testing.T) {
	for _, strict := range []bool{false, true} {
		s, err := NewSystem(Config{Instance: "trn2.3xlarge", Strict: strict})
		if err != nil {
			t.Fatal(err)
		}
		d := s.Devices[0]
		alloc := func(req mempool.AllocRequest) *mempool.Chunk {
			c, err := d.mem.pool.Alloc(req)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		mine := alloc(mempool.AllocRequest{Size: 1 << 20, Channel: 1, Lifespan: mempool.LifespanCurProcess, PID: 10})
		theirs := alloc(mempool.AllocRequest{Size: 1 << 20, Host: true, Lifespan: mempool.LifespanCurProcess, PID: 20})
		shared := alloc(mempool.AllocRequest{Size: 1 << 20, Channel: 1, Lifespan: mempool.LifespanDevice, PID: 20})
		scratch := alloc(mempool.AllocRequest{Size: 1 << 20, Channel: 1, MemType: mempool.MemTypeContiguousScratchpadDevice, Lifespan: mempool.LifespanCurProcess, PID: 10})
		res := s.Arch.MmapResources()
		var all, sem = res[0], res[0]
		for _, r := range res {
			if r.ReadOnly {
				all = r
			} else {
				sem = r
			}
		}
		foreignWrite := syscall.Errno(0)
		if strict {
			foreignWrite = syscall.EACCES
		}
		for _, c := range []struct {
			what string
			m    Mapping
			want syscall.Errno
		}{
			{"own chunk", Mapping{Tgid: 10, Offset: mine.PA, Length: mine.Size, Write: true}, 0},
			{"own chunk, part, no CAP_SYS_RAWIO", Mapping{Tgid: 10, Offset: mine.PA, Length: 4096}, syscall.EPERM},
			{"own chunk, part, CAP_SYS_RAWIO", Mapping{Tgid: 10, Offset: mine.PA, Length: 4096, RawIO: true}, 0},
			{"scratchpad past its chunk", Mapping{Tgid: 10, Offset: scratch.PA, Length: scratch.MainPoolEnd() - scratch.PA, Write: true}, 0},
			{"scratchpad past its pool", Mapping{Tgid: 10, Offset: scratch.PA, Length: scratch.MainPoolEnd() - scratch.PA + 4096}, syscall.EPERM},
			{"another's chunk, read", Mapping{Tgid: 10, Offset: theirs.PA, Length: theirs.Size}, 0},
			{"another's chunk, write", Mapping{Tgid: 10, Offset: theirs.PA, Length: theirs.Size, Write: true}, foreignWrite},
			{"another's device-lifespan chunk, write", Mapping{Tgid: 10, Offset: shared.PA, Length: shared.Size, Write: true}, 0},
			{"whole-block resource, write", Mapping{Tgid: 10, Offset: all.Offset, Length: all.Size, Write: true}, foreignWrite},
			{"semaphore resource, write", Mapping{Tgid: 10, Offset: sem.Offset, Length: sem.Size, Write: true}, 0},
			{"nothing there", Mapping{Tgid: 10, Offset: mine.PA + 1<<30, Length: 4096}, syscall.EPERM},
		} {
			if got := d.CheckMapping(c.m); got != c.want {
				t.Errorf("strict=%v %s: %v, want %v", strict, c.what, got, c.want)
			}
		}
		s.Close()
	}
}
