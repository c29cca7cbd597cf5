package seq

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

// controlLoop is a loop of control records: NOPs, an event/semaphore
// record whose wait holds at once, and the counter and branch of the
// loop; each round is 64 records.
func controlLoop(rounds uint32) *Image {
	recs := make([]*Record, 0, 64)
	for range 30 {
		recs = append(recs, NewRecord(OpNop))
	}
	for range 30 {
		r := NewRecord(OpCtrlES)
		r.SetESEvents(Events{WaitMode: WaitSemGE, WaitIdx: 200, WaitValue: 0})
		recs = append(recs, r)
	}
	recs = append(recs, NewRecord(OpDrain), NewRecord(OpNop))
	recs = append(recs, NewALUImm(ALUAdd, 1, 1, 1), NewBranch(BranchLT, 1, rounds, -63*RecordSize))
	return Assemble(0x10000, append(recs, halt())...)
}

func runControl(b *testing.B, s *Sequencer, rounds uint32) {
	s.ResetRegisters()
	if r := s.Run(context.Background(), ImageProgram(controlLoop(rounds))); r.State != Halted {
		b.Fatalf("%+v", r)
	}
}

// BenchmarkControlRecords measures one engine interpreting control
// records; the records/s metric is the figure the issue asks for.
func BenchmarkControlRecords(b *testing.B) {
	var w Words
	s := New(Config{Engine: SP, Sync: &w})
	rounds := uint32(b.N/64 + 1)
	b.ResetTimer()
	runControl(b, s, rounds)
	b.StopTimer()
	recs := s.Counts().Records
	b.ReportMetric(float64(recs)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(recs), "ns/record")
}

// BenchmarkControlRecordsCore runs the five engines of one core at once,
// sharing the core's semaphores; the metric is per engine.
func BenchmarkControlRecordsCore(b *testing.B) {
	var w Words
	var seqs [NumEngines]*Sequencer
	for e := range Engine(NumEngines) {
		seqs[e] = New(Config{Engine: e, Sync: &w})
	}
	recs := runAll(b, seqs[:], uint32(b.N/64+1))
	b.ReportMetric(float64(recs)/NumEngines/b.Elapsed().Seconds(), "records/s/engine")
}

// BenchmarkControlRecordsBox runs every engine of many cores at once, each
// core with its own semaphores: cores=128 is a 16-device trn2 box (8
// NeuronCores a device), 640 engines sharing this machine's CPUs. The
// metrics are the box's total and the mean per engine.
func BenchmarkControlRecordsBox(b *testing.B) {
	for _, cores := range []int{1, 8, 128} {
		b.Run(fmt.Sprintf("cores=%d", cores), func(b *testing.B) {
			seqs := make([]*Sequencer, 0, cores*NumEngines)
			for range cores {
				w := new(Words)
				for e := range Engine(NumEngines) {
					seqs = append(seqs, New(Config{Engine: e, Sync: w}))
				}
			}
			recs := runAll(b, seqs, uint32(b.N/64/len(seqs)+1))
			b.ReportMetric(float64(recs)/b.Elapsed().Seconds(), "records/s")
			b.ReportMetric(float64(recs)/float64(len(seqs))/b.Elapsed().Seconds(), "records/s/engine")
		})
	}
}

// runAll runs the control loop on every sequencer at once, timed, and
// returns the records they interpreted in all.
func runAll(b *testing.B, seqs []*Sequencer, rounds uint32) uint64 {
	b.ResetTimer()
	var wg sync.WaitGroup
	for _, s := range seqs {
		wg.Go(func() { runControl(b, s, rounds) })
	}
	wg.Wait()
	b.StopTimer()
	var recs uint64
	for _, s := range seqs {
		recs += s.Counts().Records
	}
	return recs
}
