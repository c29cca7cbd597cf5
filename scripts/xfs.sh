# Sourced by test.sh and bench.sh. File-backed device memory needs a
# filesystem whose files reach the chips' highest physical addresses (2^47
# and up; ext4 stops at 16 TiB): setup_xfs makes an XFS on a loop device
# under $tmp, sparse and discarding so it costs only what is written, and
# sets $xfs to its mount point; teardown_xfs undoes it.
xfs=""
setup_xfs() {
	[ -n "$xfs" ] && return 0
	if ! command -v mkfs.xfs >/dev/null; then
		echo "file backing needs mkfs.xfs (xfsprogs)" >&2
		return 1
	fi
	truncate -s 64G "$tmp/xfs.img"
	mkfs.xfs -q -f "$tmp/xfs.img"
	mkdir "$tmp/xfs"
	mount -o loop,discard "$tmp/xfs.img" "$tmp/xfs"
	xfs="$tmp/xfs"
}
teardown_xfs() {
	if [ -n "$xfs" ]; then umount -l "$xfs"; fi
	xfs=""
}
