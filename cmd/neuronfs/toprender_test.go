package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// The rates come from the growth of the counters over the wall time.
func TestTopRates(t *testing.T) {
	t0 := time.Unix(1000, 0)
	sample := func(at time.Time, timeInUse, inferences uint64) topSample {
		return topSample{at: at, devices: []topDevice{{index: 0, name: "Trainium2", cores: []topCore{{
			index:  0,
			other:  map[string]uint64{"nc_time_in_use": timeInUse, "inference_count": inferences},
			status: map[string]uint64{"success": 4, "timeout": 2, "hw_error": 1},
			devMem: map[string]uint64{"tensors": 3 << 20, "dma_rings": 4096},
		}}}}}
	}
	prev := sample(t0, 1_000_000, 10)
	row := func(lines []string) []string { return coreRow(lines, "nc0") }

	lines := renderTop(sample(t0.Add(2*time.Second), 2_000_000, 30), &prev)
	if r := row(lines); r == nil || r[1] != "50.0" || r[2] != "10.0" || r[3] != "30" || r[4] != "4" || r[5] != "3" {
		t.Fatalf("2 s later, 1 s in use, 20 inferences: %v", r)
	}
	text := strings.Join(lines, "\n")
	if !strings.Contains(text, "nc0 device memory (tensors 3.0 MiB, dma_rings 4.0 KiB)") || !strings.Contains(text, "nc0 errors: timeout 2, hw_error 1") {
		t.Fatalf("details:\n%s", text)
	}
	if r := row(renderTop(sample(t0.Add(time.Second), 5_000_000, 10), &prev)); r[1] != "100.0" {
		t.Fatalf("more time in use than wall time is capped: %v", r)
	}
	if r := row(renderTop(sample(t0.Add(time.Second), 0, 0), &prev)); r[1] != "-" || r[2] != "-" {
		t.Fatalf("counters zeroed through sysfs: %v, want no rates", r)
	}
	if r := row(renderTop(prev, nil)); r[1] != "-" || r[2] != "-" {
		t.Fatalf("first sample: %v, want no rates", r)
	}
}

// The power column shows the last valid minute, or the status.
func TestTopPower(t *testing.T) {
	at := time.Date(2026, 12, 1, 7, 41, 0, 0, time.Local)
	for attr, want := range map[string]string{
		fmt.Sprintf("POWER_STATUS_VALID,%d,10.00,30.00,20.00", at.Unix()): "power 20.00% (10.00-30.00% to 07:41)",
		"POWER_STATUS_NO_DATA,1800000000,0.00,0.00,0.00":                  "power no data",
		"": "power -",
	} {
		s := topSample{at: at, devices: []topDevice{{index: 0, name: "Trainium2", power: attr}}}
		if line := renderTop(s, nil)[0]; !strings.Contains(line, "  "+want+"  ") {
			t.Errorf("%q: %q, want %q", attr, line, want)
		}
	}
}
