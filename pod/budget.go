package pod

// RPCTimeout bounds one exchange with the coordinator: the longest a pod
// command can be held up by a running election (see device.System.Budget).
const RPCTimeout = rpcTimeout
