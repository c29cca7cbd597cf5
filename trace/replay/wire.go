package replay

import (
	"bytes"
	"encoding/gob"
)

// The sequencer (Run) and each worker (Serve) talk over a socket, one gob
// request and one reply at a time.

// Requests a worker serves.
const (
	reqStart      = "start"       // become the replayer of TGID, with the fds Inherit gives
	reqCall       = "call"        // issue record Index
	reqFDs        = "fds"         // say which fd each recorded device fd is here
	reqExec       = "exec"        // close the fds an exec closes
	reqThreadExit = "thread-exit" // end the thread replaying TID
	reqExit       = "exit"        // exit with Status (no reply)
)

type request struct {
	Op      string
	TGID    int
	Index   int
	TID     int
	Status  int
	Inherit map[int]heldFD // start: recorded fd → the fd the worker was given
	Shared  shared         // call: what the processes share, as it is now
}

type reply struct {
	Result Result
	Shared shared         // call: what the processes share, after the call
	FDs    map[int]heldFD // fds: recorded fd → this worker's
	Err    string
}

// heldFD is the fd a worker holds for a recorded device fd.
type heldFD struct {
	FD      int
	CloExec bool
}

// GobEncode writes the ranges (their fields are not exported).
func (m addrMap) GobEncode() ([]byte, error) {
	flat := make([]uint64, 0, 3*len(m.ranges))
	for _, r := range m.ranges {
		flat = append(flat, r.old, r.new, r.size)
	}
	var b bytes.Buffer
	err := gob.NewEncoder(&b).Encode(flat)
	return b.Bytes(), err
}

// GobDecode reads what GobEncode wrote.
func (m *addrMap) GobDecode(data []byte) error {
	var flat []uint64
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&flat); err != nil {
		return err
	}
	m.ranges = nil
	for i := 0; i+2 < len(flat); i += 3 {
		m.ranges = append(m.ranges, addrRange{flat[i], flat[i+1], flat[i+2]})
	}
	return nil
}
