package dmadesc

// State is an engine direction's state as DMA_ENG_GET_STATE reports it
// (the driver's enum udma_state).
type State uint32

const (
	StateDisable State = 0
	StateIdle    State = 1
	StateNormal  State = 2
	StateAbort   State = 3
)
