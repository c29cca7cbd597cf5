//go:build !arm64

package device

// taskSizeMax is the end of the x86_64 user address space that
// access_ok accepts (4-level paging).
const taskSizeMax = 1<<47 - 4096
