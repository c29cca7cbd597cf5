package ioctl

//go:generate go run ./internal/abigen -dir abi
