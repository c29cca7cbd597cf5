module example.com/neuronfs-gotest

go 1.26.8

require github.com/neuronfs/neuronfs v0.0.0

require (
	github.com/hanwen/go-fuse/v2 v2.12.1 // indirect
	github.com/sirupsen/logrus v1.10.2 // indirect
	golang.org/x/sys v0.50.0 // indirect
)

replace github.com/neuronfs/neuronfs => ../..
