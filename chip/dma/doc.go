// Package dma emulates a Neuron device's UDMA engines: per engine sixteen
// queues, each a pair of descriptor rings (TX reads the source, RX writes
// the destination) that a worker executes against physical memory once a
// doorbell makes descriptors available. The descriptor format itself is
// package dmadesc, which clients share without importing the engines.
package dma
