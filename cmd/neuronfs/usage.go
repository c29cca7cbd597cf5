package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// A mistake on the command line is answered with one line naming it and
// one pointing to the command's help, and exit status 2: never the whole
// flag list, which buries the line that matters, and never a log record.

// newFlagSet returns a command's flag set; parseFlags reports its errors.
func newFlagSet(name string) *flag.FlagSet {
	fl := flag.NewFlagSet(name, flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	fl.Usage = func() {}
	return fl
}

// parseFlags parses args for the command cmd. When it returns false the
// command is over with the returned status: 0 after -h (the command's
// help on standard output), 2 after a mistake (reported).
func parseFlags(cmd string, fl *flag.FlagSet, args []string) (int, bool) {
	err := fl.Parse(args)
	switch {
	case err == nil:
		return exitOK, true
	case errors.Is(err, flag.ErrHelp):
		printCommandHelp(cmd, fl)
		return exitOK, false
	}
	return usageFail(cmd, flagError(fl, err)), false
}

// usageFail reports a usage mistake of cmd ("" for neuronfs itself) and
// returns exit status 2. Hidden commands get no pointer: their callers
// are this program.
func usageFail(cmd string, err error) int {
	prog := "neuronfs"
	if cmd != "" {
		prog += " " + cmd
	}
	fmt.Fprintf(os.Stderr, "%s: %v\n", prog, err)
	switch _, ok := commandHelp[cmd]; {
	case cmd == "" || cmd == "help":
		fmt.Fprintln(os.Stderr, "see 'neuronfs help'")
	case ok:
		fmt.Fprintf(os.Stderr, "see 'neuronfs help %s'\n", cmd)
	}
	return exitUsage
}

// unknownCommand reports a command name that is not one.
func unknownCommand(cmd, name string) int {
	var known []string
	for n := range commandHelp {
		known = append(known, n)
	}
	slices.Sort(known)
	return usageFail(cmd, fmt.Errorf("unknown command %q (known: %s)", name, strings.Join(known, ", ")))
}

// usageLine reports a usage mistake of cmd in the words of its synopsis.
func usageLine(cmd, msg string) int {
	return usageFail(cmd, errors.New(msg))
}

// flagError rewords the flag package's errors to name flags as they are
// documented (--name) and to say what a bad value should look like.
func flagError(fl *flag.FlagSet, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return fmt.Errorf("unknown flag %s", dashed(name))
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return fmt.Errorf("%s needs a value", dashed(name))
	}
	// invalid value "V" for flag -NAME: REASON, or invalid boolean value
	// "V" for -NAME: REASON.
	rest, ok := strings.CutPrefix(msg, "invalid value ")
	if !ok {
		rest, ok = strings.CutPrefix(msg, "invalid boolean value ")
	}
	if !ok {
		return err
	}
	val, rest, _ := strings.Cut(rest, " for ")
	rest = strings.TrimPrefix(rest, "flag ")
	name, reason, _ := strings.Cut(strings.TrimPrefix(rest, "-"), ": ")
	if f := fl.Lookup(name); f != nil && (reason == "parse error" || reason == "value out of range") {
		reason = wantFor(f)
	}
	return fmt.Errorf("%s %s: %s", dashed(name), val, reason)
}

// dashed is a flag's name as the help and the README write it: -p, --name.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// wantFor says what a flag of f's type takes, for values the flag
// package only calls a parse error.
func wantFor(f *flag.Flag) string {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return "bad value"
	}
	switch g.Get().(type) {
	case bool:
		return "want true or false"
	case int, int64:
		return "want a whole number"
	case uint, uint64:
		return "want a whole number, 0 or more"
	case float64:
		return "want a number"
	case time.Duration:
		return "want a duration such as 500ms, 2s or 1m"
	}
	return "bad value"
}

// printCommandHelp prints cmd's description and flags on standard output:
// help that was asked for is the command's output, not a diagnostic.
func printCommandHelp(cmd string, fl *flag.FlagSet) {
	if text, ok := commandHelp[cmd]; ok {
		fmt.Fprintln(os.Stdout, text)
	}
	if fl == nil {
		return
	}
	n := 0
	fl.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		return
	}
	fmt.Fprintln(os.Stdout, "\nflags:")
	fl.VisitAll(func(f *flag.Flag) { fmt.Fprint(os.Stdout, flagHelp(f)) })
}

// flagHelp is a flag's two lines of help, named as the README names it
// (--name; -p for one letter), with its default where that says something.
func flagHelp(f *flag.Flag) string {
	arg, text := flag.UnquoteUsage(f)
	head := "  " + dashed(f.Name)
	if arg != "" {
		head += " " + arg
	}
	switch f.DefValue {
	case "", "0", "false", "0s", "default":
	default:
		if !strings.Contains(text, "(default") {
			text += fmt.Sprintf(" (default %s)", f.DefValue)
		}
	}
	return head + "\n    \t" + text + "\n"
}
