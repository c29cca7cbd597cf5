package fs

// WithSelfTestHold makes a mount's self-test call hold while it holds its
// device open.
func WithSelfTestHold(o *Options, hold func()) { o.selfTestHold = hold }
