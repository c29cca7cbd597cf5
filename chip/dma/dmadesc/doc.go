// Package dmadesc is the UDMA wire format that the engines (package dma),
// the runtime and the trace replayer share: the 16-byte descriptor, the
// meta word of a reducing copy and the engine state values of
// DMA_ENG_SET_STATE. It holds facts only, so a client can build and read
// rings without importing the engines.
package dmadesc
