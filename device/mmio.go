package device

import (
	"github.com/neuronfs/neuronfs/chip/mmio"
	"github.com/neuronfs/neuronfs/device/mempool"
)

// initMailbox sets up the driver's side of the firmware: the two mailbox
// buffers of the legacy protocol and the client that talks through BAR0.
func (d *Device) initMailbox() error {
	var bufs [2]*mempool.Chunk
	for i := range bufs {
		c, err := d.mem.pool.Alloc(mempool.AllocRequest{Size: mmio.MailboxSize, Host: true, MemType: mempool.MemTypeNcdevHost, Lifespan: mempool.LifespanDevice})
		if err != nil {
			return err
		}
		bufs[i] = c
	}
	d.fwc = mmio.NewClient(d.chip.BAR0(), d.sys.Arch.MiscRAMBar0, d.chip.Mem(), bufs[0].PA, bufs[1].PA)
	return nil
}
