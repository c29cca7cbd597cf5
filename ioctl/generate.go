package ioctl

//go:generate go run ./internal/abigen -structs testdata/abi-structs.tsv -ioctls testdata/abi-ioctls.tsv
