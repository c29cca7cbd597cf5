package runtime

import (
	"context"
	goruntime "runtime"
	"time"
)

// pollUntil waits for done, as a runtime polls device memory: it spins
// (yielding) for the first millisecond, which covers a short operation,
// then sleeps between polls until ctx ends.
func pollUntil(ctx context.Context, done func() bool) error {
	start := time.Now()
	for !done() {
		if time.Since(start) < time.Millisecond {
			goruntime.Gosched()
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Microsecond):
		}
	}
	return nil
}
