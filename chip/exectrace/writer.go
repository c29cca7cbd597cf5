// Package exectrace writes what a chip's engines and DMA queues did as a
// Chrome/Perfetto trace-event file (--exec-trace): a JSON object whose
// "traceEvents" array holds one complete ("X") event per traced span,
// timestamps and durations in microseconds since the file was opened,
// and metadata ("M") events naming each device (pid) and track (tid).
//
// Tracks: each core's engines are tid core*5+engine, named "nc1 PE"; each
// DMA queue is tid dmaTidBase+engine*16+queue, named "dma 3 q2". Engines
// and queues call in from their own goroutines holding nothing; one leaf
// mutex orders the writes. Close writes the closing brackets, so the file
// is valid JSON only once the daemon stopped.
package exectrace

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/neuronfs/neuronfs/chip/dma"
	"github.com/neuronfs/neuronfs/chip/seq"
	"github.com/neuronfs/neuronfs/internal/lockrank"
)

// dmaTidBase puts the DMA queues' tracks after every engine track.
const dmaTidBase = 1000

// Limits that keep a runaway program or a copy storm from filling a disk:
// each engine run has seq's limit; each DMA queue and the whole file have
// these. A track that reaches its limit gets one "trace truncated" event.
const (
	DefaultQueueLimit = 10000
	DefaultFileLimit  = 2000000
)

// Writer is one trace file.
type Writer struct {
	epoch time.Time // carries a monotonic reading

	mu     lockrank.Mutex[lockrank.ExecTrace] // guards the rest; a leaf
	f      *os.File
	bw     *bufio.Writer
	n      int // events written
	named  map[[2]int]bool
	queued map[[2]int]int // DMA events per queue track
	err    error          // the first write error; later writes are dropped
	closed bool
}

// event is one trace event as the format spells it.
type event struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`
	Dur  *float64       `json:"dur,omitempty"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	Args map[string]any `json:"args,omitempty"`
}

// Create truncates path and starts a trace there.
func Create(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("exec trace: %w", err)
	}
	w := &Writer{epoch: time.Now(), f: f, bw: bufio.NewWriterSize(f, 1<<16), named: map[[2]int]bool{}, queued: map[[2]int]int{}}
	if _, err := w.bw.WriteString(`{"displayTimeUnit":"ns","traceEvents":[`); err != nil {
		f.Close()
		return nil, fmt.Errorf("exec trace %s: %w", path, err)
	}
	return w, nil
}

// Close ends the array and the object and closes the file; events after
// it are dropped. It reports the first error any write met.
func (w *Writer) Close() error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return w.err
	}
	w.closed = true
	if w.err == nil {
		_, w.err = w.bw.WriteString("\n]}\n")
	}
	if err := w.bw.Flush(); w.err == nil {
		w.err = err
	}
	if err := w.f.Close(); w.err == nil {
		w.err = err
	}
	if w.err != nil {
		return fmt.Errorf("exec trace %s: %w", w.f.Name(), w.err)
	}
	return nil
}

// us is t in microseconds since the epoch.
func (w *Writer) us(t time.Time) float64 { return float64(t.Sub(w.epoch).Nanoseconds()) / 1e3 }

// span is a complete event from start to end.
func (w *Writer) span(name, cat string, pid, tid int, start, end time.Time, args map[string]any) event {
	dur := max(float64(end.Sub(start).Nanoseconds())/1e3, 0)
	return event{Name: name, Cat: cat, Ph: "X", Ts: w.us(start), Dur: &dur, Pid: pid, Tid: tid, Args: args}
}

// write appends ev, naming its track first if it is new (track names
// come from trackName, called only then).
func (w *Writer) write(ev event, trackName func() string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.err != nil || w.n >= DefaultFileLimit {
		return
	}
	key := [2]int{ev.Pid, ev.Tid}
	if !w.named[key] {
		w.named[key] = true
		w.put(event{Name: "thread_name", Ph: "M", Pid: ev.Pid, Tid: ev.Tid, Args: map[string]any{"name": trackName()}})
		w.put(event{Name: "thread_sort_index", Ph: "M", Pid: ev.Pid, Tid: ev.Tid, Args: map[string]any{"sort_index": ev.Tid}})
	}
	if w.n == DefaultFileLimit-1 {
		ev = event{Name: "trace truncated", Ph: "X", Ts: ev.Ts, Dur: new(float64), Pid: ev.Pid, Tid: ev.Tid, Args: map[string]any{"limit": DefaultFileLimit}}
	}
	w.put(ev)
}

// put writes one event; the caller holds mu.
func (w *Writer) put(ev event) {
	b, err := json.Marshal(ev)
	if err != nil {
		w.err = err
		return
	}
	if w.n > 0 {
		w.bw.WriteByte(',')
	}
	w.bw.WriteByte('\n')
	if _, err := w.bw.Write(b); err != nil {
		w.err = err
		return
	}
	w.n++
}

// Device is one chip's part of the trace: its pid.
type Device struct {
	w   *Writer
	pid int
}

// Device returns the tracks of device pid, named name; nil on a nil
// Writer (no trace).
func (w *Writer) Device(pid int, name string) *Device {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	if !w.closed && w.err == nil {
		w.put(event{Name: "process_name", Ph: "M", Pid: pid, Args: map[string]any{"name": name}})
		w.put(event{Name: "process_sort_index", Ph: "M", Pid: pid, Args: map[string]any{"sort_index": pid}})
	}
	w.mu.Unlock()
	return &Device{w: w, pid: pid}
}

// Engine is the tracer of core nc's engine e.
func (d *Device) Engine(nc int, e seq.Engine) seq.Tracer {
	return &engineTrack{d: d, nc: nc, e: e, tid: nc*seq.NumEngines + int(e)}
}

// Copy traces one completed step of DMA engine eng's queue qid (an
// OnCopy hook): the engine reports a step only once it is done, so the
// event marks its completion and has no duration.
func (d *Device) Copy(eng, qid int, src, dst, n uint64) {
	w := d.w
	tid := dmaTidBase + eng*dma.QueuesPerEngine + qid
	key := [2]int{d.pid, tid}
	now := time.Now()
	w.mu.Lock()
	k := w.queued[key]
	w.queued[key] = k + 1
	w.mu.Unlock()
	name := func() string { return fmt.Sprintf("dma %d q%d", eng, qid) }
	switch {
	case k > DefaultQueueLimit:
		return
	case k == DefaultQueueLimit:
		w.write(w.span("trace truncated", "dma", d.pid, tid, now, now, map[string]any{"limit": DefaultQueueLimit}), name)
		return
	}
	args := map[string]any{"src": hex(src), "dst": hex(dst), "bytes": n}
	w.write(w.span("copy", "dma", d.pid, tid, now, now, args), name)
}

// engineTrack is one engine's track.
type engineTrack struct {
	d   *Device
	nc  int
	e   seq.Engine
	tid int
}

func (t *engineTrack) Trace(ev seq.TraceEvent) {
	w := t.d.w
	args := map[string]any{"pc": hex(ev.PC)}
	var name string
	switch ev.Kind {
	case seq.TraceRecords:
		name = "control"
		args["records"], args["first"] = ev.N, ev.Op.Name()
	case seq.TraceRecord:
		name = ev.Op.Name()
		if ev.Detail != "" {
			name += " " + ev.Detail
		}
		if ev.NotEmulated != "" {
			// Its outputs were not computed: said in the name, so a
			// timeline shows it without opening the event.
			name += " (not emulated)"
			args["not_emulated"], args["opcode"] = ev.NotEmulated, fmt.Sprintf("%#02x", uint8(ev.Op))
		}
	case seq.TraceWait:
		name = "wait " + ev.Wait.What()
		args["record"], args["now"] = ev.Op.Name(), int32(ev.Wait.Now)
		if ev.Detail != "" {
			args["awaits"] = ev.Detail // what nothing emulated answers (chip/actors.go)
		}
		if ev.Stopped {
			args["stopped"] = true
		}
	case seq.TraceTruncated:
		name = "trace truncated"
		args["limit"] = "the run's event limit"
	default:
		return
	}
	w.write(w.span(name, "engine", t.d.pid, t.tid, ev.Start, ev.End, args), func() string {
		return fmt.Sprintf("nc%d %v", t.nc, t.e)
	})
}

func hex(v uint64) string { return fmt.Sprintf("%#x", v) }
