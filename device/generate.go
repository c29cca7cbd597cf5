package device

// The command pages merge the ABI description (ioctl/) with which macros
// have handlers here, so they are generated from this package; the lock
// order page comes along.
//go:generate go run ./internal/docgen -out ../docs/commands -lockorder ../docs/lock-order.md
