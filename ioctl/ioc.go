package ioctl

// Linux asm-generic ioctl number layout: nr bits 0-7, type 8-15, size 16-29,
// direction 30-31.
const (
	DirNone  uint32 = 0
	DirWrite uint32 = 1
	DirRead  uint32 = 2

	nrBits   = 8
	typeBits = 8
	sizeBits = 14

	nrShift   = 0
	typeShift = nrShift + nrBits
	sizeShift = typeShift + typeBits
	dirShift  = sizeShift + sizeBits

	// Magic is the ioctl type byte of every Neuron command ('N').
	Magic uint32 = 'N'
)

// IOC builds a command number the way the kernel's _IOC macro does.
func IOC(dir, typ, nr, size uint32) uint32 {
	return dir<<dirShift | typ<<typeShift | nr<<nrShift | size<<sizeShift
}

// Dir returns _IOC_DIR(cmd).
func Dir(cmd uint32) uint32 { return cmd >> dirShift & 3 }

// Type returns _IOC_TYPE(cmd).
func Type(cmd uint32) uint32 { return cmd >> typeShift & (1<<typeBits - 1) }

// Nr returns _IOC_NR(cmd).
func Nr(cmd uint32) uint32 { return cmd >> nrShift & (1<<nrBits - 1) }

// Size returns _IOC_SIZE(cmd).
func Size(cmd uint32) uint32 { return cmd >> sizeShift & (1<<sizeBits - 1) }
