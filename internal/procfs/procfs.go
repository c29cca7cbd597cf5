// Package procfs reads single fields of /proc files ("Key:\tvalue" lines).
package procfs

import (
	"bytes"
	"fmt"
	"os"
)

// Field returns the trimmed value of the first line of file that starts
// with key followed by a colon.
func Field(file, key string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	prefix := []byte(key + ":")
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, prefix); ok {
			return string(bytes.TrimSpace(v)), nil
		}
	}
	return "", fmt.Errorf("no %s in %s", key, file)
}
