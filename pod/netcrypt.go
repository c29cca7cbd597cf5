package pod

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
)

// A link's session. Both ends send a fresh random nonce in the clear;
// each direction then gets its own AES-256-GCM key, an HMAC-SHA256 of both
// nonces and the pod's name under the shared pod secret. Every message
// travels sealed in one frame whose GCM nonce is the frame's sequence
// number in that direction. So a stranger without the secret can neither
// read nor forge a frame; a frame replayed from another connection, or
// out of order, or reflected back to its sender, fails to open; and two
// pods sharing a network but not a name never understand each other.

const (
	netMagic   = "NFSP\x01" // protocol and version
	nonceLen   = 32
	gcmOverhd  = 16
	maxFrame   = maxMsg + gcmOverhd
	MinSecret  = 16 // bytes of pod secret required
	keyContext = "neuronfs pod link v1"
)

// errAuth: a frame that does not open under the session's key.
var errAuth = errors.New("pod: message failed authentication (wrong pod secret, or replayed or altered)")

type session struct {
	conn             net.Conn
	send, recv       cipher.AEAD
	sendSeq, recvSeq uint64
}

func deriveAEAD(secret []byte, pod, dir string, nc, ns []byte) cipher.AEAD {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(keyContext + "\x00" + dir + "\x00" + pod + "\x00"))
	mac.Write(nc)
	mac.Write(ns)
	block, err := aes.NewCipher(mac.Sum(nil))
	if err != nil {
		panic(err) // a 32-byte key always makes a cipher
	}
	g, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	return g
}

// handshake exchanges nonces on conn and returns the session; the caller
// sets conn's deadline. client tells which end this is.
func handshake(conn net.Conn, secret []byte, pod string, client bool) (*session, error) {
	mine := make([]byte, len(netMagic)+nonceLen)
	copy(mine, netMagic)
	if _, err := rand.Read(mine[len(netMagic):]); err != nil {
		return nil, err
	}
	if _, err := conn.Write(mine); err != nil {
		return nil, err
	}
	theirs := make([]byte, len(mine))
	if _, err := io.ReadFull(conn, theirs); err != nil {
		return nil, err
	}
	if string(theirs[:len(netMagic)]) != netMagic {
		return nil, fmt.Errorf("%w: not a neuronfs pod peer", errBadMsg)
	}
	nc, ns := mine[len(netMagic):], theirs[len(netMagic):]
	if !client {
		nc, ns = ns, nc
	}
	c2s := deriveAEAD(secret, pod, "c2s", nc, ns)
	s2c := deriveAEAD(secret, pod, "s2c", nc, ns)
	if client {
		return &session{conn: conn, send: c2s, recv: s2c}, nil
	}
	return &session{conn: conn, send: s2c, recv: c2s}, nil
}

func seqNonce(seq uint64) []byte {
	var n [12]byte
	binary.BigEndian.PutUint64(n[4:], seq)
	return n[:]
}

// write seals m in the next frame.
func (s *session) write(m netMsg) error {
	ct := s.send.Seal(nil, seqNonce(s.sendSeq), m.encode(), nil)
	s.sendSeq++
	frame := binary.BigEndian.AppendUint16(make([]byte, 0, 2+len(ct)), uint16(len(ct)))
	_, err := s.conn.Write(append(frame, ct...))
	return err
}

// read opens the next frame and decodes its message.
func (s *session) read() (netMsg, error) {
	var hdr [2]byte
	if _, err := io.ReadFull(s.conn, hdr[:]); err != nil {
		return netMsg{}, err
	}
	n := int(binary.BigEndian.Uint16(hdr[:]))
	if n <= gcmOverhd || n > maxFrame {
		return netMsg{}, fmt.Errorf("%w: frame of %d bytes", errBadMsg, n)
	}
	ct := make([]byte, n)
	if _, err := io.ReadFull(s.conn, ct); err != nil {
		return netMsg{}, err
	}
	pt, err := s.recv.Open(nil, seqNonce(s.recvSeq), ct, nil)
	if err != nil {
		return netMsg{}, errAuth
	}
	s.recvSeq++
	return decodeNetMsg(pt)
}
