package device

import (
	"runtime"
	"testing"
)

// access_ok ends where the architecture's user address space does: an
// arm64 stack (just below 1<<48) is user memory there, not on x86_64.
func TestAccessOKEndsAtTaskSize(t *testing.T) {
	end, ok := map[string]uint64{"amd64": 1<<47 - 4096, "arm64": 1 << 48}[runtime.GOARCH]
	if !ok {
		t.Skipf("no user address space end known for %s", runtime.GOARCH)
	}
	if !accessOK(end-4096, 4096) {
		t.Errorf("the last page below %#x refused", end)
	}
	if accessOK(end-4096, 4097) || accessOK(end, 1) {
		t.Errorf("a range past %#x accepted", end)
	}
	if accessOK(end-1, 2) || accessOK(^uint64(0), 2) {
		t.Error("a range that wraps or crosses the end accepted")
	}
}
