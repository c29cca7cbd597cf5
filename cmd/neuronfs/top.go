package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/neuronfs/neuronfs/runtime"
)

func cmdTop(args []string) int {
	fl := newFlagSet("top")
	root := fl.String("root", "/", "where the driver's dev/ and sys/ are (a 'neuronfs mount' point)")
	interval := fl.Duration("interval", time.Second, "time between refreshes (and the window of the rates)")
	once := fl.Bool("once", false, "print one snapshot (rates over one interval) and exit")
	if status, ok := parseFlags("top", fl, args); !ok {
		return status
	}
	if fl.NArg() != 0 {
		return usageLine("top", fmt.Sprintf("unexpected argument %q", fl.Arg(0)))
	}
	if *interval <= 0 {
		return usageLine("top", fmt.Sprintf("--interval %v: want a positive duration", *interval))
	}
	t := &topView{host: runtime.Host{Root: *root}, interval: *interval, out: os.Stdout}
	if !*once && isTerminal(int(os.Stdout.Fd())) {
		return t.live(os.Stdin)
	}
	return t.snapshots(*once)
}

// topView is one run of top.
type topView struct {
	host     runtime.Host
	interval time.Duration
	out      io.Writer
	prev     *topSample
}

// sample takes a sample and renders it against the previous one.
func (t *topView) sample() (topSample, []string, error) {
	s, err := takeSample(t.host)
	if err != nil {
		return s, nil, err
	}
	lines := renderTop(s, t.prev)
	t.prev = &s
	return s, lines, nil
}

// snapshots prints plain text: with once, one snapshot after an interval
// (so the rates mean something), else one per interval until a signal.
func (t *topView) snapshots(once bool) int {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGPIPE)
	defer signal.Stop(sigs)
	tick := time.NewTicker(t.interval)
	defer tick.Stop()
	if once {
		if _, _, err := t.sample(); err != nil {
			return failLine("top", err)
		}
		select {
		case <-tick.C:
		case <-sigs:
			return exitOK
		}
	}
	for n := 0; ; n++ {
		s, lines, err := t.sample()
		if err != nil {
			return failLine("top", err)
		}
		if n > 0 {
			fmt.Fprintln(t.out)
		}
		mode := topEvery
		if once {
			mode = topOnce
		}
		if _, err := fmt.Fprintf(t.out, "%s\n%s\n", topHeader(s, t.interval, mode), strings.Join(lines, "\n")); err != nil {
			return exitFailure // the reader went away
		}
		if once {
			return exitOK
		}
		select {
		case <-tick.C:
		case <-sigs:
			return exitOK
		}
	}
}

// live redraws the screen in place every interval until q (or ^C) on in,
// SIGINT or SIGTERM; the terminal is restored whichever ends it.
func (t *topView) live(in *os.File) int {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGWINCH)
	defer signal.Stop(sigs)
	quit := make(chan struct{})
	if isTerminal(int(in.Fd())) {
		restore, err := rawInput(int(in.Fd()))
		if err != nil {
			return failLine("top", err)
		}
		defer restore()
		go readQuit(in, quit)
	}
	fmt.Fprint(t.out, ansiAltScreen+ansiHideCursor)
	defer fmt.Fprint(t.out, ansiShowCursor+ansiMainScreen)

	tick := time.NewTicker(t.interval)
	defer tick.Stop()
	for {
		s, lines, err := t.sample()
		if err != nil {
			lines = []string{"error: " + err.Error()}
		}
		t.draw(append([]string{topHeader(s, t.interval, topLive), ""}, lines...))
		select {
		case <-tick.C:
		case <-quit:
			return exitOK
		case sig := <-sigs:
			if sig == syscall.SIGWINCH {
				continue // redraw at the new size
			}
			return exitOK
		}
	}
}

// draw writes a frame from the top-left corner over the previous one,
// cut to the terminal's size.
func (t *topView) draw(lines []string) {
	cols, rows := terminalSize(int(os.Stdout.Fd()))
	if rows > 0 && len(lines) > rows {
		lines = lines[:rows]
	}
	var b strings.Builder
	b.WriteString(ansiHome)
	for i, l := range lines {
		if cols > 0 && len(l) > cols {
			l = l[:cols]
		}
		b.WriteString(l + ansiClearEOL)
		if i < len(lines)-1 {
			b.WriteString("\n")
		}
	}
	b.WriteString(ansiClearEOS)
	io.WriteString(t.out, b.String())
}

// readQuit closes quit at q, Q, ^C or the end of input.
func readQuit(in io.Reader, quit chan<- struct{}) {
	r := bufio.NewReader(in)
	for {
		c, err := r.ReadByte()
		if err != nil || c == 'q' || c == 'Q' || c == 3 {
			close(quit)
			return
		}
	}
}
