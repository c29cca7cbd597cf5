package pod

// spoofPDSLocked sets the answers of a PDS platform, once: that driver
// runs no election there and makes the data up from module parameters
// (node count, pod id) and the server id the firmware reports.
func (e *Election) spoofPDSLocked() {
	if e.pdsDone {
		return
	}
	e.pdsDone = true
	n := e.cfg.PDSNodeCount
	res := Result{NodeID: -1, NodeCount: n, LRMask: e.lr, PodSerial: e.cfg.PDSServerID}
	switch n {
	case 2:
		res.LRMask = LinkLeft // a 2-node PDS pod uses the vertical links
		res.NodeID = int(e.cfg.ServerID)
	case 4:
		res.NodeID = int(e.cfg.ServerID)
	default:
		res.NodeCount = 0
		e.log.WithField("nodes", n).Error("invalid PDS node count")
	}
	e.lr = res.LRMask
	e.res = res
	e.state = StateSuccess
}
