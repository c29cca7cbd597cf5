package device

// taskSizeMax is the end of the arm64 user address space that access_ok
// accepts: 1<<VA_BITS, with the 48-bit addresses of Debian's and most
// distributions' arm64 kernels (4K pages). Guessed for others: a 52-bit
// (LVA) kernel accepts more, a 39-bit one less.
const taskSizeMax = 1 << 48
