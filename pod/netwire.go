package pod

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The network coordinator's messages, as they are once a frame has been
// opened (see netcrypt.go). They carry only what a server's links carry:
// a neighbour's hello (its place in the cabling), register reads of its
// misc RAM, and their answers. Nothing a peer sends can change the
// receiver's state: the wire is read-only by construction.

// Message types.
const (
	msgHello      byte = 1 // client → server: size, slot, side
	msgHelloReply byte = 2 // server → client: slot, verdict
	msgRead       byte = 3 // client → server: dev, off, n
	msgReadReply  byte = 4 // server → client: n words
)

// Hello verdicts.
const (
	helloOK       byte = 0
	helloNotReady byte = 1 // the server does not know its own slot yet: a chip not up
	helloRefused  byte = 2 // the client is not cabled to this server
)

// maxMsg bounds a message's plaintext (a read answer of maxReadWords).
const maxMsg = 2 + 4*maxReadWords

type netMsg struct {
	typ     byte
	size    int // hello
	slot    int // hello, hello reply
	side    Side
	verdict byte
	dev     int // read
	off     uint32
	n       int
	words   []uint32 // read reply
}

var errBadMsg = errors.New("pod: malformed message")

// encode returns the message's bytes.
func (m netMsg) encode() []byte {
	switch m.typ {
	case msgHello:
		return []byte{m.typ, byte(m.size), byte(m.slot), byte(m.side)}
	case msgHelloReply:
		return []byte{m.typ, byte(m.slot), m.verdict}
	case msgRead:
		b := []byte{m.typ, byte(m.dev), 0, 0, byte(m.n)}
		binary.BigEndian.PutUint16(b[2:], uint16(m.off))
		return b
	case msgReadReply:
		b := []byte{m.typ, byte(len(m.words))}
		for _, w := range m.words {
			b = binary.BigEndian.AppendUint32(b, w)
		}
		return b
	}
	panic(fmt.Sprintf("pod: encode of message type %d", m.typ))
}

// decodeNetMsg parses and checks one message: whatever it accepts is in
// range for a Hub-style register table and the cabling.
func decodeNetMsg(b []byte) (netMsg, error) {
	if len(b) == 0 || len(b) > maxMsg {
		return netMsg{}, errBadMsg
	}
	m := netMsg{typ: b[0]}
	switch m.typ {
	case msgHello:
		if len(b) != 4 {
			return m, errBadMsg
		}
		m.size, m.slot, m.side = int(b[1]), int(b[2]), Side(b[3])
		if (m.size != 2 && m.size != 4) || m.slot >= m.size || (m.side != Left && m.side != Right) {
			return m, fmt.Errorf("%w: hello size %d slot %d side %d", errBadMsg, m.size, m.slot, m.side)
		}
	case msgHelloReply:
		if len(b) != 3 || b[2] > helloRefused || int(b[1]) >= MaxNodes {
			return m, errBadMsg
		}
		m.slot, m.verdict = int(b[1]), b[2]
	case msgRead:
		if len(b) != 5 {
			return m, errBadMsg
		}
		m.dev, m.off, m.n = int(b[1]), uint32(binary.BigEndian.Uint16(b[2:])), int(b[4])
		if err := checkRegs(m.dev, m.off, m.n); err != nil {
			return m, fmt.Errorf("%w: %v", errBadMsg, err)
		}
	case msgReadReply:
		if len(b) < 2 {
			return m, errBadMsg
		}
		m.n = int(b[1])
		if m.n < 1 || m.n > maxReadWords || len(b) != 2+4*m.n {
			return m, errBadMsg
		}
		m.words = make([]uint32, m.n)
		for i := range m.words {
			m.words[i] = binary.BigEndian.Uint32(b[2+4*i:])
		}
	default:
		return m, fmt.Errorf("%w: type %d", errBadMsg, m.typ)
	}
	return m, nil
}
