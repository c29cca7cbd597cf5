package fs_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/neuronfs/neuronfs/fs/testutil"
	"github.com/neuronfs/neuronfs/internal/testenv"
)

// Some tests need other processes (attach slots are per tgid); the test
// binary doubles as that helper process when NEURONFS_TEST_HELPER is set.
func TestMain(m *testing.M) {
	testenv.QuickRaceExit()
	if mode := os.Getenv("NEURONFS_TEST_HELPER"); mode != "" {
		testutil.JoinGuard()
		os.Exit(helperMain(mode, os.Args))
	}
	testutil.StartGuard()
	os.Exit(m.Run())
}

func helperMain(mode string, args []string) int {
	h, ok := helpers[mode]
	if !ok {
		fmt.Fprintf(os.Stderr, "unknown helper %q\n", mode)
		return 2
	}
	return h()
}
