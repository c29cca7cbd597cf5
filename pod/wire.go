package pod

import (
	"encoding/json"
	"errors"
	"fmt"
)

// The socket coordinator's protocol: one JSON object per line each way, a
// request and then its response. The first request of a connection joins
// a pod; the connection is the member, and closing it leaves.

// maxLine bounds a protocol line (requests and responses are far smaller).
const maxLine = 4096

type request struct {
	Op     string `json:"op"` // join, publish, read
	Pod    string `json:"pod,omitempty"`
	Size   int    `json:"size,omitempty"`
	Slot   int    `json:"slot,omitempty"`
	Serial uint64 `json:"serial,omitempty"`
	Side   int    `json:"side,omitempty"`
	Dev    int    `json:"dev,omitempty"`
	Off    uint32 `json:"off,omitempty"`
	N      int    `json:"n,omitempty"`
	Val    uint32 `json:"val,omitempty"`
}

type response struct {
	Slot  int      `json:"slot,omitempty"`
	Words []uint32 `json:"words,omitempty"`
	Link  bool     `json:"link,omitempty"` // ErrLink
	Err   string   `json:"err,omitempty"`
}

// decodeRequest parses and checks one request line.
func decodeRequest(line []byte) (request, error) {
	var q request
	if len(line) > maxLine {
		return q, errors.New("pod: request too long")
	}
	if err := json.Unmarshal(line, &q); err != nil {
		return q, fmt.Errorf("pod: bad request: %w", err)
	}
	switch q.Op {
	case "join":
		return q, q.join().validate()
	case "publish":
		return q, checkRegs(q.Dev, q.Off, 1)
	case "read":
		if q.Side != int(Left) && q.Side != int(Right) {
			return q, fmt.Errorf("pod: bad side %d", q.Side)
		}
		return q, checkRegs(q.Dev, q.Off, q.N)
	}
	return q, fmt.Errorf("pod: unknown request %q", q.Op)
}

func (q request) join() Join {
	return Join{Pod: q.Pod, Size: q.Size, Slot: q.Slot, Serial: q.Serial}
}

// decodeResponse parses one response line; want is the number of words a
// read expects (0 for other requests).
func decodeResponse(line []byte, want int) (response, error) {
	var r response
	if len(line) > maxLine {
		return r, errors.New("pod: response too long")
	}
	if err := json.Unmarshal(line, &r); err != nil {
		return r, fmt.Errorf("pod: bad response: %w", err)
	}
	if r.Link || r.Err != "" {
		return r, nil
	}
	if len(r.Words) != want || r.Slot < 0 || r.Slot >= MaxNodes {
		return r, fmt.Errorf("pod: response with %d words and slot %d, want %d words", len(r.Words), r.Slot, want)
	}
	return r, nil
}
