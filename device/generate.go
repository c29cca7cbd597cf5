package device

// The command pages merge the ABI description (ioctl/) with which macros
// have handlers here, so they are generated from this package.
//go:generate go run ./internal/docgen -out ../docs/commands
