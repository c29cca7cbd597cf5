package replay

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Summary counts the outcomes.
type Summary struct{ Match, Differ, Skipped, NotCompared int }

// Summarize counts results; NotCompared counts rewritten or unrecorded
// values inside calls that ran.
func Summarize(rs []Result) Summary {
	var s Summary
	for _, r := range rs {
		switch r.Status {
		case Match:
			s.Match++
		case Differ:
			s.Differ++
		case Skipped:
			s.Skipped++
		}
		if r.Status != Skipped {
			s.NotCompared += len(r.NotCompared)
		}
	}
	return s
}

// WriteTable prints one row per call and a total line.
func WriteTable(w io.Writer, rs []Result) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tCALL\tRESULT\tDETAIL")
	for _, r := range rs {
		detail := strings.Join(r.Diffs, "; ")
		if len(r.NotCompared) > 0 {
			if detail != "" {
				detail += "; "
			}
			detail += "not compared: " + strings.Join(r.NotCompared, ", ")
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", r.Seq, r.Call, r.Status, detail)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	s := Summarize(rs)
	_, err := fmt.Fprintf(w, "%d calls: %d match, %d differ, %d skipped; %d values rewritten or unrecorded, not compared\n", len(rs), s.Match, s.Differ, s.Skipped, s.NotCompared)
	return err
}
