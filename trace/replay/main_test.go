package replay

import (
	"fmt"
	"os"
	"testing"

	"github.com/neuronfs/neuronfs/trace"
)

// workerEnv names the trace a re-executed test binary replays as a worker
// (Options.Worker), serving the sequencer on fd 3 as cmd/neuronfs's does.
const workerEnv = "NEURONFS_REPLAY_TEST_WORKER"

func TestMain(m *testing.M) {
	if path := os.Getenv(workerEnv); path != "" {
		os.Exit(testWorker(path))
	}
	os.Exit(m.Run())
}

func testWorker(path string) int {
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	tr, err := trace.Read(f)
	f.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := Serve(tr, Options{}, os.NewFile(3, "replay sequencer")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
