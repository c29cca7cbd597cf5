package ioctl

// Notification queue types (nq_type of the NOTIFICATIONS_INIT commands)
// and owners (nq_dev_type), as the driver's shared header numbers them.
const (
	NQTypeTrace    = 0
	NQTypeNotify   = 1
	NQTypeEvent    = 2
	NQTypeError    = 3
	NQTypeTraceDMA = 4
	NQTypeThrottle = 5

	NQDevTypeCore  = 0
	NQDevTypeTopSP = 1
)
