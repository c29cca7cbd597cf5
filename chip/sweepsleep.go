package chip

import (
	"os"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
)

// sweepSleeper waits for the semaphore sweeper's next poll. Go's timers
// wake it with millisecond granularity here, and a nanosleep in a
// goroutine makes the scheduler hand its P to another thread at every
// wake (the measured cost was a whole core at 10k polls/s), so it waits
// on a timerfd through the netpoller: a parked goroutine, woken with
// microsecond precision for about what the kernel's wake-up costs.
type sweepSleeper struct {
	fd   int
	file *os.File // nil: the timerfd is unavailable, use Go's timers
	buf  [8]byte
}

func newSweepSleeper(log *logrus.Entry) *sweepSleeper {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		log.WithError(err).Info("no timerfd: semaphore windows polled at Go timer granularity")
		return &sweepSleeper{fd: -1}
	}
	return &sweepSleeper{fd: fd, file: os.NewFile(uintptr(fd), "semaphore-sweep-timer")}
}

// sleep returns after d (at once if d <= 0).
func (s *sweepSleeper) sleep(d time.Duration) {
	if d <= 0 {
		return
	}
	if s.file == nil {
		time.Sleep(d)
		return
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	if err := unix.TimerfdSettime(s.fd, 0, &spec, nil); err != nil {
		time.Sleep(d)
		return
	}
	s.file.Read(s.buf[:]) // the expiry count; an error only wakes early
}

func (s *sweepSleeper) close() {
	if s.file != nil {
		s.file.Close()
	}
}
