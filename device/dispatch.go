package device

import (
	"runtime/debug"
	"syscall"

	"github.com/sirupsen/logrus"

	"github.com/neuronfs/neuronfs/ioctl"
)

// Handler serves one command (or one _IOC_NR family of commands).
type Handler func(r *Request) Result

// lane is one of the driver's two ioctl entry points: commands matched by
// exact value first, then families matched by _IOC_NR alone.
type lane struct {
	exact map[uint32]Handler
	byNr  map[uint32]Handler
}

func (l *lane) find(cmd uint32) Handler {
	if h, ok := l.exact[cmd]; ok {
		return h
	}
	return l.byNr[ioctl.Nr(cmd)]
}

// dispatcher routes a command the way the driver's ncdev_ioctl does.
type dispatcher struct {
	table *ioctl.Table
	main  lane
	misc  lane
	gated map[uint32]bool
}

func newDispatcher(t *ioctl.Table) *dispatcher {
	d := &dispatcher{
		table: t,
		main:  lane{exact: map[uint32]Handler{}, byNr: map[uint32]Handler{}},
		misc:  lane{exact: map[uint32]Handler{}, byNr: map[uint32]Handler{}},
		gated: map[uint32]bool{},
	}
	for _, c := range t.Commands() {
		h, ok := handlers[c.Name]
		if !ok {
			h = unsupported
			if c.MatchByNr {
				h = unsupportedFamily(t, c.Nr())
			}
		}
		l := &d.main
		if c.Lane == ioctl.LaneMisc {
			l = &d.misc
		}
		if c.MatchByNr {
			if c.ExactInFamily {
				h = exactMembers(t, c.Nr(), h)
			}
			// A family shares one handler; do not let a member without a
			// registered handler shadow one that has it.
			if _, set := l.byNr[c.Nr()]; !set || ok {
				l.byNr[c.Nr()] = h
			}
		} else {
			l.exact[c.Cmd] = h
		}
		if c.AttachGated {
			d.gated[c.Cmd] = true
		}
	}
	return d
}

// Ioctl serves one request and returns the value for the caller: >= 0 is
// ioctl()'s return value, < 0 a negated errno the transport can deliver.
func (s *System) Ioctl(r *Request) (result Result) {
	defer func() {
		// A bug in one handler must not take the daemon down: the caller
		// gets EIO and everyone else keeps being served.
		if p := recover(); p != nil {
			s.log.WithFields(logrus.Fields{"cmd": r.Cmd, "tgid": r.Caller.Tgid, "panic": p, "stack": string(debug.Stack())}).Error("ioctl handler panicked")
			result = Errno(syscall.EIO)
			// A lock the handler took may still be held, and serving on
			// could hang every caller behind it: the transport ends the
			// daemon cleanly instead (see SetPanicHandler).
			if h := s.onPanic.Load(); h != nil {
				(*h)(p)
			}
		}
	}()
	return s.serve(r)
}

// SetPanicHandler installs what runs after a handler panicked (and was
// logged): the transport aborts its connection and ends the daemon, so
// callers get ENOTCONN instead of waiting behind a lock the handler left
// held. Without one the caller gets EIO and serving goes on (tests).
func (s *System) SetPanicHandler(h func(p any)) { s.onPanic.Store(&h) }

// serve routes r without the panic guard (fuzzing wants to see panics).
func (s *System) serve(r *Request) Result {
	d := s.dispatch
	var h Handler
	if r.File.FreeAccess {
		h = d.misc.find(r.Cmd)
	} else {
		if d.gated[r.Cmd] && !r.Dev().IsAttached(r.Caller.Tgid) {
			return Errno(syscall.EACCES)
		}
		if h = d.main.find(r.Cmd); h == nil {
			h = d.misc.find(r.Cmd)
		}
	}
	if h == nil {
		return Errno(syscall.EINVAL)
	}
	return h(r)
}

// unsupported answers commands whose facility is not emulated yet the way
// the driver answers a request it does not support (-ENOTSUPP, errno 524).
func unsupported(r *Request) Result { return Errno(ioctl.ENOTSUPP) }

// unsupportedFamily is unsupported for an _IOC_NR family: a command value
// that is not one of the family's members is refused with EINVAL first,
// as every family handler of the driver does.
func unsupportedFamily(t *ioctl.Table, nr uint32) Handler {
	return exactMembers(t, nr, unsupported)
}

// exactMembers lets through only the command values this driver version
// has with _IOC_NR nr; the driver's family handler answers EINVAL to any
// other value.
func exactMembers(t *ioctl.Table, nr uint32, h Handler) Handler {
	members := map[uint32]bool{}
	for _, c := range t.ByNr(nr) {
		members[c.Cmd] = true
	}
	return func(r *Request) Result {
		if !members[r.Cmd] {
			return Errno(syscall.EINVAL)
		}
		return h(r)
	}
}
