package seq

import "testing"

// discard is a tracer that keeps nothing: what tracing costs the engine
// itself, without a writer.
type discard struct{ n int }

func (d *discard) Trace(TraceEvent) { d.n++ }

// BenchmarkControlRecordsTraced is BenchmarkControlRecords with a tracer
// (whose limit is soon reached, as a looping program's would be).
func BenchmarkControlRecordsTraced(b *testing.B) {
	var w Words
	s := New(Config{Engine: SP, Sync: &w, Tracer: new(discard)})
	rounds := uint32(b.N/64 + 1)
	b.ResetTimer()
	runControl(b, s, rounds)
	b.StopTimer()
	recs := s.Counts().Records
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(recs), "ns/record")
}
