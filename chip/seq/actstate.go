package seq

// actState is the ACT engine's state across records: one fp32
// accumulator per partition (G-ACT2).
type actState struct {
	acc [Partitions]float32
}
