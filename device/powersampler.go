package device

import "time"

// powerSampler is the system's one goroutine that runs both halves of
// power utilisation (power.go) for every device once per firmware period.
type powerSampler struct {
	devices []*Device
	loop    loop
}

// start takes the driver's first sample at once, as it follows the probe
// (it rolls up an empty minute, stamped with the load time), then samples
// every powerPeriod until halt.
func (p *powerSampler) start(devices []*Device) {
	p.devices = devices
	p.tick(time.Now(), powerPeriod)
	p.loop.start(p.run)
}

func (p *powerSampler) run(stop <-chan struct{}) {
	t := time.NewTicker(powerPeriod)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			p.tick(now, powerPeriod)
		}
	}
}

// tick publishes each device's sample for the last period and lets the
// driver take it.
func (p *powerSampler) tick(now time.Time, period time.Duration) {
	for _, d := range p.devices {
		d.chip.PublishPower(period)
		d.power.sample(now)
	}
}

// halt ends the sampling goroutine (at Close, or in tests that drive the
// clock themselves).
func (p *powerSampler) halt() { p.loop.halt() }
