package fs

// RingServed returns, per CPU queue, the requests the io_uring transport
// took from its rings (nil under the classic transport).
func (f *FS) RingServed() []uint64 {
	if f.transport != TransportURing || f.ring == nil {
		return nil
	}
	return f.ring.Served()
}

// FailURingQueue makes io_uring queue qid fail its setup in later mounts
// (-1: none), to test the fallback.
func FailURingQueue(qid int) { testFailURingQueue = qid }
