package device

// loop is one of the system's background goroutines (the semaphore-window
// sweeper, the power sampler): started once, stopped and waited for once.
type loop struct {
	stop, done chan struct{}
}

// start runs body on its own goroutine until stop is closed.
func (l *loop) start(body func(stop <-chan struct{})) {
	l.stop, l.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(l.done)
		body(l.stop)
	}()
}

// halt stops the goroutine and waits for it; a loop never started, or
// halted already, is left alone.
func (l *loop) halt() {
	if l.stop != nil {
		close(l.stop)
		<-l.done
		l.stop = nil
	}
}
