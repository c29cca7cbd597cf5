package mmio

import (
	"encoding/binary"
	"errors"

	"github.com/neuronfs/neuronfs/internal/lockrank"
)

// Client is the driver's side of the FW-IO mailbox: it stages requests,
// numbers them, rings the doorbell and reads the answer, with the
// driver's retry counts. The emulated firmware answers during the
// doorbell write, so the driver's 1 ms polls and 1 s timeouts never wait.
type Client struct {
	bar    *BAR
	misc   uint64 // misc-RAM offset in the BAR
	mem    Memory
	reqPA  uint64 // legacy request buffer (host address with the route bit)
	respPA uint64 // legacy response buffer

	mu  lockrank.Mutex[lockrank.FWClient]
	seq uint8
}

// Errors of a mailbox exchange.
var (
	ErrTimeout        = errors.New("fw-io: no answer")
	ErrFailed         = errors.New("fw-io: firmware reported failure")
	ErrUnknownCommand = errors.New("fw-io: unknown command")
	ErrOldFirmware    = errors.New("fw-io: firmware API too old for the register protocol")
	ErrTooLarge       = errors.New("fw-io: request too large")
)

// Retry counts per command (the legacy path retries 30 times).
const legacyRetries = 30

var newProtocolRetries = map[uint8]int{CmdRead: 15, CmdPostToCW: 15, CmdSetPowerProfile: 3, CmdGetData: 3, CmdSetFeature: 3}

// NewClient returns the driver side of the mailbox of the firmware at
// misc in bar; reqPA and respPA are its MailboxSize host buffers.
func NewClient(bar *BAR, misc uint64, mem Memory, reqPA, respPA uint64) *Client {
	return &Client{bar: bar, misc: misc, mem: mem, reqPA: reqPA, respPA: respPA}
}

func (c *Client) nextSeqLocked() uint8 {
	c.seq++
	if c.seq == 0 {
		c.seq = 1
	}
	return c.seq
}

func header(seq, cmd uint8, payload []byte) [8]byte {
	var h [8]byte
	h[0], h[1] = seq, cmd
	binary.LittleEndian.PutUint16(h[2:], uint16(requestHeaderSize+len(payload)))
	binary.LittleEndian.PutUint32(h[4:], RequestCRC(h, payload))
	return h
}

// Legacy runs a request through the host-memory buffers; the answer's
// payload is returned.
func (c *Client) Legacy(cmd uint8, payload []byte) ([]byte, error) {
	if len(payload) > MailboxSize-requestHeaderSize {
		return nil, ErrTooLarge
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	req, ok := c.mem.Slice(c.reqPA, MailboxSize)
	resp, ok2 := c.mem.Slice(c.respPA, MailboxSize)
	if !ok || !ok2 {
		return nil, ErrTimeout
	}
	err := ErrTimeout
	for range legacyRetries {
		c.bar.Write32(c.misc+RegRequestHi, uint32(c.reqPA>>32))
		c.bar.Write32(c.misc+RegRequestLo, uint32(c.reqPA))
		c.bar.Write32(c.misc+RegResponseHi, uint32(c.respPA>>32))
		c.bar.Write32(c.misc+RegResponseLo, uint32(c.respPA))
		seq := c.nextSeqLocked()
		h := header(seq, cmd, payload)
		copy(req, h[:])
		copy(req[requestHeaderSize:], payload)
		resp[0] = 0
		c.bar.Write32(c.misc+RegDoorbell, 1)
		if resp[0] != seq {
			err = ErrTimeout
			continue
		}
		switch resp[1] {
		case RespSuccess:
			n := int(binary.LittleEndian.Uint16(resp[2:])) - legacyResponseHeaderSize
			if n < 0 || n > MailboxSize-legacyResponseHeaderSize {
				return nil, ErrFailed
			}
			return append([]byte(nil), resp[legacyResponseHeaderSize:legacyResponseHeaderSize+n]...), nil
		case RespUnknownCommand:
			return nil, ErrUnknownCommand
		}
		err = ErrFailed
	}
	return nil, err
}

// Register runs a request through the misc-RAM registers (API version 7
// and later); payload and answer fit the 128-byte data window.
func (c *Client) Register(cmd uint8, payload []byte) ([]byte, error) {
	if c.bar.Read32(c.misc+RegAPIVersion) < NewProtocolMinAPI {
		return nil, ErrOldFirmware
	}
	if len(payload) > DataWindowSize {
		return nil, ErrTooLarge
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	retries, ok := newProtocolRetries[cmd]
	if !ok {
		retries = legacyRetries
	}
	err := ErrTimeout
	for range retries {
		seq := c.nextSeqLocked()
		h := header(seq, cmd, payload)
		for i := 0; i < len(payload); i += 4 {
			var w [4]byte
			copy(w[:], payload[i:])
			c.bar.Write32(c.misc+RegData+uint64(i), binary.LittleEndian.Uint32(w[:]))
		}
		c.bar.Write32(c.misc+RegRequestHi, binary.LittleEndian.Uint32(h[0:]))
		c.bar.Write32(c.misc+RegRequestLo, binary.LittleEndian.Uint32(h[4:]))
		c.bar.Write32(c.misc+RegResponseHi, 0)
		c.bar.Write32(c.misc+RegResponseLo, 0)
		c.bar.Write32(c.misc+RegAck, 1)
		c.bar.Write32(c.misc+RegDoorbell, 1)
		// A timed-out attempt leaves the answer of an earlier failed one:
		// the driver's ret keeps its -1.
		if c.bar.Read32(c.misc+RegDoorbell) != 0 {
			if err != ErrFailed {
				err = ErrTimeout
			}
			continue
		}
		r := c.bar.Read32(c.misc + RegRequestHi)
		if uint8(r) != seq {
			if err != ErrFailed {
				err = ErrTimeout
			}
			continue
		}
		switch uint8(r >> 8) {
		case RespSuccess:
			n := min(max(int(r>>16)-registerResponseHeaderSize, 0), DataWindowSize)
			out := make([]byte, n)
			for i := 0; i < n; i += 4 {
				var w [4]byte
				binary.LittleEndian.PutUint32(w[:], c.bar.Read32(c.misc+RegData+uint64(i)))
				copy(out[i:], w[:])
			}
			return out, nil
		case RespUnknownCommand:
			return nil, ErrUnknownCommand
		}
		err = ErrFailed
	}
	return nil, err
}
