package chip

import (
	"context"
	"testing"
)

// The pool's line gives turns in order, except that an engine whose run
// was stopped goes first: its turn only ends it, and a stop waits for it.
func TestEnginePoolTakesStoppedFirst(t *testing.T) {
	live := &seqRun{ctx: context.Background()}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	stopped := &seqRun{ctx: ctx}
	a, b, s := &engineRun{r: live}, &engineRun{r: live}, &engineRun{r: stopped}
	p := newEnginePool()
	for _, e := range []*engineRun{a, b, s} {
		p.line = append(p.line, poolTurn{e: e})
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, want := range []*engineRun{s, a, b} {
		if got := p.take().e; got != want {
			t.Fatalf("turn %d went to %p, want %p (a %p, b %p, stopped %p)", i, got, want, a, b, s)
		}
	}
	if len(p.line) != 0 {
		t.Fatalf("%d turns left", len(p.line))
	}
}
