package trace

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"
)

func encode(t *testing.T, tr *Trace) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := NewWriter(&b, tr.Header)
	if err != nil {
		t.Fatal(err)
	}
	for i := range tr.Records {
		if err := w.Write(&tr.Records[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

const sample = "../cmd/neuronfs/testdata/traces/bringup-trn2.3xlarge.jsonl"

func TestReadSample(t *testing.T) {
	data, err := os.ReadFile(sample)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Records) != 51 || tr.Header.DriverVersion != "2.25.4.0" {
		t.Fatalf("%d records, header %+v", len(tr.Records), tr.Header)
	}
	// A version 1 file (no lifetime records) reads, and writes back the
	// same under the current format.
	if tr.Header.Format != formatV1 {
		t.Fatalf("the sample is %q, want a version 1 file", tr.Header.Format)
	}
	current := bytes.Replace(data, []byte(formatV1), []byte(Format), 1)
	if got := encode(t, tr); !bytes.Equal(got, current) {
		t.Fatal("writing the sample back changes it")
	}
	var out strings.Builder
	if err := Print(&out, tr); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"MEM_BUF_COPY64", "copy_to_mem_handle       1", "*buffer"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("printed trace lacks %q", want)
		}
	}
}

func TestReadRejects(t *testing.T) {
	for name, in := range map[string]string{
		"empty":       "",
		"format":      `{"format":"other"}`,
		"op":          `{"format":"neuronfs-trace/1"}` + "\n" + `{"seq":1,"op":"read"}`,
		"oversized":   `{"format":"neuronfs-trace/1"}` + "\n" + `{"seq":1,"op":"ioctl","size":2,"before":"000000"}`,
		"nested":      `{"format":"neuronfs-trace/1"}` + "\n" + `{"seq":1,"op":"ioctl","nested":[{"field":"b","len":1,"after":"0000"}]}`,
		"hex":         `{"format":"neuronfs-trace/1"}` + "\n" + `{"seq":1,"op":"ioctl","size":8,"before":"zz"}`,
		"not json":    `{"format":"neuronfs-trace/1"}` + "\n" + `{`,
		"header junk": `[1]`,
	} {
		if _, err := Read(strings.NewReader(in)); err == nil {
			t.Errorf("%s: accepted %q", name, in)
		}
	}
}

// FuzzRead: the decoder never panics, whatever it accepts prints, and
// writing it back reads back the same.
func FuzzRead(f *testing.F) {
	// Small seeds: the fuzzer minimizes every new input, which takes
	// long on a whole trace.
	if data, err := os.ReadFile(sample); err == nil {
		lines := bytes.SplitAfter(data, []byte("\n"))
		f.Add(bytes.Join(lines[:2], nil))
		f.Add(append(append([]byte{}, lines[0]...), lines[10]...))
	}
	f.Add([]byte(`{"format":"neuronfs-trace/1"}` + "\n" + `{"seq":1,"op":"ioctl","cmd":2148027907,"size":80,"before":"03","nested":[{"field":"x","len":2,"before":"01"}]}`))
	f.Add([]byte(`{"format":"neuronfs-trace/2"}` + "\n" + `{"seq":1,"op":"fork","tid":7,"tgid":7,"child":9}` + "\n" + `{"seq":2,"op":"exit","tid":9,"tgid":9,"process_exit":true,"signal":9}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		if err := Print(io.Discard, tr); err != nil {
			t.Fatal(err)
		}
		once := encode(t, tr)
		again, err := Read(bytes.NewReader(once))
		if err != nil {
			t.Fatalf("re-reading what was written: %v\n%s", err, once)
		}
		if twice := encode(t, again); !bytes.Equal(once, twice) {
			t.Fatalf("round trip changed the trace:\n%s\n%s", once, twice)
		}
	})
}
