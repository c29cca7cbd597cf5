package fs_test

import (
	"slices"
	"testing"
	"time"
)

// Ratios against a floor are measured by interleaving: blocks of floor
// operations alternate with blocks of the measured ones in one loop. On a
// noisy 2-core VM the round-trip time of the same ioctl drifts by tens of
// percent between consecutive sub-benchmarks, so a floor measured before
// or after the subject biases the ratio; interleaved, both see the same
// machine.

const pairBlock = 256

// pairRun holds every operation's latency, floor and subject alike.
type pairRun struct {
	Floor, Subject []time.Duration
}

// interleave runs n floor operations and n subject operations in
// alternating blocks. subject reports the time of its measured part, so
// that untimed staging can precede it.
func interleave(n int, floor func(), subject func() time.Duration) pairRun {
	r := pairRun{Floor: make([]time.Duration, 0, n), Subject: make([]time.Duration, 0, n)}
	for done := 0; done < n; done += pairBlock {
		k := min(pairBlock, n-done)
		for range k {
			t0 := time.Now()
			floor()
			r.Floor = append(r.Floor, time.Since(t0))
		}
		for range k {
			r.Subject = append(r.Subject, subject())
		}
	}
	return r
}

// clocked adapts an operation that is timed whole.
func clocked(op func()) func() time.Duration {
	return func() time.Duration {
		t0 := time.Now()
		op()
		return time.Since(t0)
	}
}

type latencyStats struct{ mean, p50, p99 float64 }

func summarize(lat []time.Duration) latencyStats {
	s := slices.Clone(lat)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return latencyStats{
		mean: float64(sum.Nanoseconds()) / float64(len(s)),
		p50:  float64(s[len(s)/2].Nanoseconds()),
		p99:  float64(s[len(s)*99/100].Nanoseconds()),
	}
}

// report publishes the subject's mean as ns/op, its median and p99, the
// floor's, and the three ratios (x-floor is mean over mean).
func (r pairRun) report(b *testing.B) {
	if len(r.Subject) == 0 || len(r.Floor) == 0 {
		b.Fatal("paired run measured nothing")
	}
	s, f := summarize(r.Subject), summarize(r.Floor)
	b.ReportMetric(s.mean, "ns/op")
	b.ReportMetric(s.p50, "p50-ns")
	b.ReportMetric(s.p99, "p99-ns")
	b.ReportMetric(f.mean, "floor-ns/op")
	b.ReportMetric(f.p50, "floor-p50-ns")
	b.ReportMetric(s.mean/f.mean, "x-floor")
	b.ReportMetric(s.p50/f.p50, "x-floor-p50")
	b.ReportMetric(s.p99/f.p99, "x-floor-p99")
}
