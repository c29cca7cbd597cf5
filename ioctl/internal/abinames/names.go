// Package abinames holds the one rule that turns C identifiers of the driver
// ABI into Go names, shared by the generator and the parity test.
package abinames

import (
	"regexp"
	"strings"
)

var initialisms = map[string]string{
	"dma": "DMA", "nc": "NC", "bdf": "BDF", "id": "ID", "ds": "DS", "nq": "NQ", "pa": "PA",
	"hbm": "HBM", "h2t": "H2T", "crwl": "CRWL", "mc": "MC", "rid": "RID", "uuid": "UUID",
	"bar": "BAR", "va": "VA", "fd": "FD", "pid": "PID", "rw": "RW", "sz": "Sz", "nds": "NDS",
	"hw": "HW", "ext": "Ext", "rx": "RX", "tx": "TX", "rxc": "RXC", "axi": "AXI", "qid": "QID",
	"sw": "SW", "zc": "ZC", "mt": "MT", "nd": "ND", "did": "DID", "v1": "V1", "v2": "V2",
	"sbuf": "SBUF", "cinit": "CInit", "eng": "Eng", "mmap": "Mmap", "nrt": "NRT", "app": "App", "dmabuf": "DMABuf",
}

// goName turns snake_case (or SCREAMING_SNAKE) into an exported Go name.
func GoName(s string) string {
	var b strings.Builder
	for _, tok := range strings.Split(strings.ToLower(s), "_") {
		if tok == "" {
			continue
		}
		if v, ok := initialisms[tok]; ok {
			b.WriteString(v)
			continue
		}
		// Tokens like "v2mt64" or "descriptors64": name each letter run on its own.
		for _, run := range runRe.FindAllString(tok, -1) {
			if v, ok := initialisms[run]; ok {
				b.WriteString(v)
			} else if len(run) == 1 {
				b.WriteString(strings.ToUpper(run))
			} else {
				b.WriteString(strings.ToUpper(run[:1]) + run[1:])
			}
		}
	}
	return b.String()
}

var runRe = regexp.MustCompile(`[a-z]+|[0-9]+`)

func TypeName(cname string) string {
	for _, p := range []string{"neuron_ioctl_", "neuron_"} {
		if strings.HasPrefix(cname, p) {
			return GoName(strings.TrimPrefix(cname, p))
		}
	}
	return GoName(cname)
}
