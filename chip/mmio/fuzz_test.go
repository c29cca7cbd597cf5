package mmio

import (
	"encoding/binary"
	"testing"
)

// FuzzFirmware serves arbitrary legacy requests and register-protocol
// headers: the firmware must answer or stay silent, never panic, and
// always clear its doorbell.
func FuzzFirmware(f *testing.F) {
	good := header(3, CmdRead, make([]byte, 8))
	f.Add(append(good[:], make([]byte, 8)...), uint32(0), false)
	f.Add([]byte{1, 2, 0xff, 0xff, 0, 0, 0, 0}, uint32(0x00ff0101), true)
	f.Fuzz(func(t *testing.T, req []byte, regHeader uint32, registerProtocol bool) {
		fw, bar, _, mem := newTestFirmware(t, 8)
		copy(mem.B, req)
		if registerProtocol {
			bar.Write32(miscBar+RegRequestHi, regHeader)
			bar.Write32(miscBar+RegRequestLo, binary.LittleEndian.Uint32(append(req, 0, 0, 0, 0)))
			bar.Write32(miscBar+RegAck, 1)
		} else {
			bar.Write32(miscBar+RegRequestHi, uint32(hostBase>>32))
			bar.Write32(miscBar+RegRequestLo, 0)
			bar.Write32(miscBar+RegResponseHi, uint32(hostBase>>32))
			bar.Write32(miscBar+RegResponseLo, 2*MailboxSize)
		}
		bar.Write32(miscBar+RegDoorbell, 1)
		if bar.Read32(miscBar+RegDoorbell) != 0 {
			t.Fatal("doorbell left set")
		}
		if st := fw.State(); st.Errors > st.Requests {
			t.Fatalf("more errors than requests: %+v", st)
		}
	})
}
