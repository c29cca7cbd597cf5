package main

import (
	"bytes"
	"os"
	"testing"
)

// The committed table must be what the reference tables generate.
func TestFieldTableCurrent(t *testing.T) {
	want, err := generate("../../../../ioctl/testdata/abi-structs.tsv", "../../../../ioctl/testdata/abi-ioctls.tsv")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../fields_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("trace/abi/fields_gen.go is stale: run 'go generate ./trace/abi' and commit")
	}
}
