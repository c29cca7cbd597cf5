package abi

//go:generate go run ./internal/fieldgen -structs ../../ioctl/testdata/abi-structs.tsv -ioctls ../../ioctl/testdata/abi-ioctls.tsv -out fields_gen.go
