module github.com/neuronfs/neuronfs

go 1.26.8

require (
	github.com/cilium/ebpf v0.22.0
	github.com/hanwen/go-fuse/v2 v2.12.1
	github.com/sirupsen/logrus v1.10.2
	golang.org/x/sys v0.50.0
)

require gonum.org/v1/gonum v0.17.0
