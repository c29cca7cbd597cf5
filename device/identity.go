package device

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash/fnv"

	"github.com/neuronfs/neuronfs/dhal"
)

// identity is what names the emulated host and its devices: the serial
// numbers the firmware reports (misc RAM 0x38/0x3c) and the EC2 instance
// id and UUID that DMI shows, all derived from the instance type and the
// node serial so that one host keeps them across runs and two emulated
// hosts differ. It never changes after NewSystem.
type identity struct {
	inst       *dhal.Instance
	nodeSerial uint64 // Config.NodeSerial; 0: the instance's own serials
}

// serial is device index's serial number. With a node serial set, device
// 0 carries it (pod election compares device 0's) and the others derive
// theirs from it.
func (id identity) serial(index int) uint64 {
	if id.nodeSerial == 0 {
		return id.inst.SerialNumber(index)
	}
	if index == 0 {
		return id.nodeSerial
	}
	h := fnv.New64a()
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:], id.nodeSerial)
	binary.LittleEndian.PutUint64(b[8:], uint64(index))
	h.Write(b[:])
	v := h.Sum64()
	if v == 0 || v == ^uint64(0) || v <= 15 { // values that read as "no data" or as a device index
		v ^= 0x5a5a5a5a5a5a5a5a
	}
	return v
}

// digest is the hex seed of one of the instance's identifiers (what names
// it), from device 0's serial number.
func (id identity) digest(what string) string {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], id.serial(0))
	return fmt.Sprintf("%x", sha256.Sum256(append([]byte("ec2-"+what+":"), b[:]...)))
}

// instanceID is the EC2 instance id, "i-" and 17 hex digits, which Nitro
// puts in board_asset_tag.
func (id identity) instanceID() string {
	return "i-" + id.digest("instance-id")[:17]
}

// uuid is the instance's SMBIOS UUID, shown as product_uuid and
// product_serial: on EC2 it starts with "ec2".
func (id identity) uuid() string {
	h := "ec2" + id.digest("uuid")[:29]
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
