package main

import (
	"golang.org/x/sys/unix"
)

// Terminal control for top, on termios directly (no new dependency).

// isTerminal reports whether fd is a terminal.
func isTerminal(fd int) bool {
	_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return err == nil
}

// terminalSize returns the columns and rows of terminal fd (0, 0 if
// unknown).
func terminalSize(fd int) (cols, rows int) {
	ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ)
	if err != nil {
		return 0, 0
	}
	return int(ws.Col), int(ws.Row)
}

// rawInput puts terminal fd in a mode where each key press is read at
// once, unechoed, and ^C arrives as a byte rather than a signal; output
// processing stays on, so "\n" still returns the carriage. It returns the
// function that restores the previous mode.
func rawInput(fd int) (restore func() error, err error) {
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, err
	}
	t := *old
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Iflag &^= unix.IXON | unix.ICRNL | unix.INLCR | unix.IGNCR
	t.Cc[unix.VMIN] = 1
	t.Cc[unix.VTIME] = 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &t); err != nil {
		return nil, err
	}
	return func() error { return unix.IoctlSetTermios(fd, unix.TCSETS, old) }, nil
}

// ANSI sequences of the live screen.
const (
	ansiAltScreen  = "\x1b[?1049h" // the alternate screen, as top uses
	ansiMainScreen = "\x1b[?1049l"
	ansiHideCursor = "\x1b[?25l"
	ansiShowCursor = "\x1b[?25h"
	ansiHome       = "\x1b[H"
	ansiClearEOL   = "\x1b[K"
	ansiClearEOS   = "\x1b[J"
)
