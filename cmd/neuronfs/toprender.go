package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/neuronfs/neuronfs/runtime"
)

// Rendering of top samples as text lines, the same for the live screen
// and the plain snapshots.

// renderTop renders cur; prev (nil for none) gives the rates. The
// utilisation of a core is the growth of nc_time_in_use (microseconds of
// the core in use, as the runtime's datastore counts them) over the wall
// time between the two samples; INFER/s is the growth of inference_count
// over the same time. Both read "-" without a previous sample or when a
// counter went down (it was zeroed through sysfs).
func renderTop(cur topSample, prev *topSample) []string {
	var b strings.Builder
	for k, d := range cur.devices {
		if k > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "neuron%d  %s  power %s  host memory %s%s%s\n", d.index, d.name, formatPower(d.power), formatBytes(sum(d.hostMem)), categories(d.hostMem), heldNote(d.held))
		if d.err != nil {
			fmt.Fprintf(&b, "  unreadable: %v\n", d.err)
			continue
		}
		var pd *topDevice
		if prev != nil {
			pd = prev.device(d.index)
		}
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "  CORE\tUTIL%\tINFER/s\tINFERENCES\tSUCCESS\tERRORS\tRESETS\tRESET FAILS\tDEVICE MEM\tHOST MEM\t")
		var details []string
		for _, c := range d.cores {
			var pc *topCore
			if pd != nil {
				pc = pd.core(c.index)
			}
			util, rate := "-", "-"
			if pc != nil {
				dt := cur.at.Sub(prev.at)
				if v, ok := growth(c.other, pc.other, "nc_time_in_use"); ok && dt > 0 {
					util = fmt.Sprintf("%.1f", min(100, 100*float64(v)/float64(dt.Microseconds())))
				}
				if v, ok := growth(c.other, pc.other, "inference_count"); ok && dt > 0 {
					rate = fmt.Sprintf("%.1f", float64(v)/dt.Seconds())
				}
			}
			errs := errorCounts(c.status)
			fmt.Fprintf(tw, "  nc%d\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t\n", c.index, util, rate,
				c.other["inference_count"], c.status["success"], sum(errs),
				c.other["reset_req_count"], c.other["reset_fail_count"], formatBytes(c.memDev), formatBytes(c.memHost))
			if mem := categories(c.devMem); mem != "" {
				details = append(details, fmt.Sprintf("  nc%d device memory%s", c.index, mem))
			}
			if len(errs) > 0 {
				details = append(details, fmt.Sprintf("  nc%d errors:%s", c.index, counts(errs)))
			}
		}
		tw.Flush()
		for _, l := range details {
			b.WriteString(l + "\n")
		}
		for _, c := range d.blocked {
			fmt.Fprintf(&b, "  nc%d blocked: %s\n", c.Core, strings.Join(c.Waiting, "; "))
		}
		for _, c := range d.notEmulated {
			fmt.Fprintf(&b, "  nc%d NOT EMULATED: %d of %d records only counted, results not computed (last %s)\n",
				c.Core, c.NotEmulated, c.Records, strings.Join(c.Last, "; "))
		}
	}
	return strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
}

func (s *topSample) device(index int) *topDevice {
	for i := range s.devices {
		if s.devices[i].index == index {
			return &s.devices[i]
		}
	}
	return nil
}

func (d *topDevice) core(index int) *topCore {
	for i := range d.cores {
		if d.cores[i].index == index {
			return &d.cores[i]
		}
	}
	return nil
}

// growth is how much counter name grew since prev; not ok if it is
// missing or went down.
func growth(cur, prev map[string]uint64, name string) (uint64, bool) {
	c, ok1 := cur[name]
	p, ok2 := prev[name]
	if !ok1 || !ok2 || c < p {
		return 0, false
	}
	return c - p, true
}

// errorCounts are the non-zero status counters other than success.
func errorCounts(status map[string]uint64) map[string]uint64 {
	out := map[string]uint64{}
	for k, v := range status {
		if k != "success" && v != 0 {
			out[k] = v
		}
	}
	return out
}

func sum(m map[string]uint64) uint64 {
	var t uint64
	for _, v := range m {
		t += v
	}
	return t
}

// categories renders the non-zero byte counts of m, largest first, as
// " (name size, ...)".
func categories(m map[string]uint64) string {
	names := nonZero(m)
	if len(names) == 0 {
		return ""
	}
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + " " + formatBytes(m[n])
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// counts renders non-zero counts as " name N, ...".
func counts(m map[string]uint64) string {
	var parts []string
	for _, n := range nonZero(m) {
		parts = append(parts, fmt.Sprintf(" %s %d", n, m[n]))
	}
	return strings.Join(parts, ",")
}

// nonZero lists the keys with non-zero values, largest value first.
func nonZero(m map[string]uint64) []string {
	var names []string
	for n, v := range m {
		if v != 0 {
			names = append(names, n)
		}
	}
	sort.Slice(names, func(i, j int) bool {
		if m[names[i]] != m[names[j]] {
			return m[names[i]] > m[names[j]]
		}
		return names[i] < names[j]
	})
	return names
}

// formatBytes renders n in binary units.
func formatBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

// topMode is how top shows its samples, which its header says.
type topMode int

const (
	topEvery topMode = iota // a plain snapshot per interval
	topLive                 // a screen redrawn in place
	topOnce                 // one snapshot, rates over one interval
)

// topModeText ends the header: the interval, in the words of the mode.
var topModeText = map[topMode]string{
	topEvery: "every %v",
	topLive:  "every %v  (q quits)",
	topOnce:  "rates over %v",
}

// topHeader is the first line of a screen or snapshot.
func topHeader(s topSample, interval time.Duration, mode topMode) string {
	return fmt.Sprintf("neuronfs top  %s  devices: %d  "+topModeText[mode], s.at.Format("15:04:05"), len(s.devices), interval)
}

// heldNote shows an emulated device's resident memory against what it
// declares.
func heldNote(m *runtime.DeviceMemory) string {
	if m == nil {
		return ""
	}
	return fmt.Sprintf("  (emulator holds %s of %s)", formatBytes(m.Held), formatBytes(m.Declared))
}

// formatPower renders stats/power/utilization
// ("STATUS,epoch-seconds,min,max,avg", percentages): the last minute's
// average with its range and the minute it ended, or what the status says
// when there is no valid minute.
func formatPower(attr string) string {
	f := strings.Split(attr, ",")
	if len(f) != 5 {
		return "-"
	}
	status := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(f[0], "POWER_STATUS_"), "_", " "))
	if status != "valid" {
		return status
	}
	at := f[1]
	if sec, err := strconv.ParseInt(f[1], 10, 64); err == nil {
		at = time.Unix(sec, 0).Format("15:04")
	}
	return fmt.Sprintf("%s%% (%s-%s%% to %s)", f[4], f[2], f[3], at)
}
