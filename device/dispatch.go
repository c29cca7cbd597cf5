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
	byNr  map[uint32]*family
}

func (l *lane) find(cmd uint32) Handler {
	if h, ok := l.exact[cmd]; ok {
		return h
	}
	if f := l.byNr[ioctl.Nr(cmd)]; f != nil {
		return f.serve
	}
	return nil
}

// family is the commands sharing an _IOC_NR that the driver routes to
// one handler, which then tells its variants apart: by exact value
// (exactly), by _IOC_SIZE (bySize), or inside the handler (any).
type family struct {
	exactly bool
	exact   map[uint32]Handler
	bySize  map[uint32]Handler
	any     Handler
}

func (f *family) serve(r *Request) Result {
	if h, ok := f.exact[r.Cmd]; ok {
		return h(r)
	}
	if f.exactly {
		return Errno(syscall.EINVAL) // not one of the family's values
	}
	if f.bySize != nil {
		if h, ok := f.bySize[ioctl.Size(r.Cmd)]; ok {
			return h(r)
		}
		return Errno(syscall.EINVAL)
	}
	return f.any(r)
}

// dispatcher routes a command the way the driver's ncdev_ioctl does.
type dispatcher struct {
	table *ioctl.Table
	main  lane
	misc  lane
	gated map[uint32]bool
	// macros names each command value, and byNr a family's commands
	// matched by _IOC_NR alone, for the aimed faults (callfault.go).
	macros map[uint32]ioctl.Macro
	byNr   map[uint32]ioctl.Macro
}

func newDispatcher(t *ioctl.Table) *dispatcher {
	d := &dispatcher{
		table:  t,
		main:   lane{exact: map[uint32]Handler{}, byNr: map[uint32]*family{}},
		misc:   lane{exact: map[uint32]Handler{}, byNr: map[uint32]*family{}},
		gated:  map[uint32]bool{},
		macros: map[uint32]ioctl.Macro{},
		byNr:   map[uint32]ioctl.Macro{},
	}
	for _, c := range t.Commands() {
		d.macros[c.Cmd] = c.Macro
		if _, ok := d.byNr[c.Nr()]; c.MatchByNr && !ok {
			d.byNr[c.Nr()] = c.Macro
		}
		h := commands[c.Macro].handler
		ok := h != nil
		if !ok {
			h = unsupported
		}
		l := &d.main
		if c.Lane == ioctl.LaneMisc {
			l = &d.misc
		}
		if c.AttachGated {
			d.gated[c.Cmd] = true
		}
		if !c.MatchByNr {
			l.exact[c.Cmd] = h
			continue
		}
		f := l.byNr[c.Nr()]
		if f == nil {
			f = &family{exact: map[uint32]Handler{}}
			l.byNr[c.Nr()] = f
		}
		switch {
		case c.ExactInFamily:
			f.exactly = true
			f.exact[c.Cmd] = h
		case c.SizeSelects:
			if f.bySize == nil {
				f.bySize = map[uint32]Handler{}
			}
			f.bySize[c.EncodedSize()] = h
		case f.any == nil || ok:
			// One handler serves the family; a member without one must
			// not shadow a member that has it.
			f.any = h
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
	if s.faults.aimed.Load() != nil {
		if e := s.faults.callFails(d.macroOf(r.Cmd)); e != 0 {
			return Errno(e)
		}
	}
	return h(r)
}

// macroOf names the command cmd is, or 0.
func (d *dispatcher) macroOf(cmd uint32) ioctl.Macro {
	if m, ok := d.macros[cmd]; ok {
		return m
	}
	return d.byNr[ioctl.Nr(cmd)]
}

// unsupported answers commands whose facility is not emulated yet the way
// the driver answers a request it does not support (-ENOTSUPP, errno 524).
func unsupported(r *Request) Result { return Errno(ioctl.ENOTSUPP) }

// arg adapts a handler of a typed argument: it copies the argument in, as
// the driver's handlers start (a fault answers what copyIn answers), so
// the handler body holds only the driver's logic.
func arg[T any](h func(r *Request, v *T) Result) Handler {
	return func(r *Request) Result {
		var v T
		if n := copyIn(r, r.Arg, &v); n != 0 {
			return n
		}
		return h(r, &v)
	}
}
