package device

import (
	"fmt"
	"strings"

	"github.com/neuronfs/neuronfs/chip/mmio"
)

// barPagesShown bounds the pages of unmodelled BAR0 words CoresFile
// lists per device; the count always covers them all.
const barPagesShown = 16

// writeUnmodelled adds to CoresFile the BAR0 words of device dev that no
// block models and no memory backs (kept as plain registers): what the
// runtime touched that the emulator does not understand, by 4 KiB page.
// Nothing when there are none.
func writeUnmodelled(b *strings.Builder, dev string, bar *mmio.BAR) {
	words, pages := bar.Plain()
	if words == 0 {
		return
	}
	fmt.Fprintf(b, "%s BAR0: %d unmodelled words kept as plain registers, in %d pages:", dev, words, len(pages))
	for i, p := range pages {
		if i == barPagesShown {
			fmt.Fprintf(b, " and %d more", len(pages)-i)
			break
		}
		fmt.Fprintf(b, " %#x(%d)", p.Base, p.Words)
	}
	b.WriteString("\n")
}
