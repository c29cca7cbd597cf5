#!/usr/bin/env bash
# Boots Debian's Linux 6.1 cloud kernel in QEMU (plain TCG, no KVM) with a
# busybox initramfs holding static builds of neuronfs and of the
# cmd/neuronfs test binary, and runs the `neuronfs run` tests there: a
# kernel without FUSE passthrough or FUSE over io_uring, where run serves
# device descriptors through its seccomp supervisor; first as root, then
# as uid 65534 (a run without root), then as uid 65534 with /dev/fuse
# removed and user namespaces disabled (an unprivileged container: run's
# filter host view).
#
# Needs root only to install what is missing (apt-get: qemu-system-x86,
# busybox-static, cpio; python3 and python3-pytest, whose interpreter,
# libraries and imported modules the guest gets); the kernel package is fetched by name with
# apt-get download and unpacked into a cache, never installed.
#
# NEURONFS_VMTEST_ARCH=arm64 boots Debian's arm64 cloud kernel in
# qemu-system-aarch64 (TCG, machine virt) with arm64 builds instead: the
# seccomp filters and the supervisor with arm64's syscall numbers, for
# real. apt then reads arm64 package lists of the same sources into the
# cache (no foreign architecture is added to dpkg) to fetch the kernel
# and busybox-static; the C client is left out (no cross compiler).
#
# Environment:
#   NEURONFS_VMTEST_CACHE    cache directory (default
#                            ${XDG_CACHE_HOME:-/var/cache}/neuronfs-vmtest)
#   NEURONFS_VMTEST_KERNEL   kernel package (default: what the metapackage
#                            linux-image-cloud-amd64 depends on, if 6.1,
#                            else the newest linux-image-6.1.0-N-cloud-amd64)
#   NEURONFS_VMTEST_RUN      -test.run pattern for the guest (default below)
#   NEURONFS_VMTEST_TIMEOUT  seconds for the whole boot, all phases (default
#                            1800; arm64 4800)
#   NEURONFS_VMTEST_TEST_TIMEOUT  -test.timeout of each phase's tests
#                            (default 15m; arm64 45m: TCG emulates arm64
#                            on x86_64 about three times slower)
#   VMTEST_UNPRIVILEGED      1 (default): then run the smoke check and the
#                            tests again as uid 65534, a run without root;
#                            0: root only
#   NEURONFS_VMTEST_UNPRIVILEGED_RUN  -test.run pattern for that phase
#                            (default below)
#   VMTEST_CONTAINER         1 (default): last, as uid 65534 with /dev/fuse
#                            removed and user namespaces disabled (run's
#                            filter host view); 0: not
#   NEURONFS_VMTEST_CONTAINER_RUN  -test.run pattern for that phase
#   NEURONFS_VMTEST_ARCH     amd64 (default) or arm64
set -euo pipefail
cd "$(dirname "$0")/.."

# The run-level tests that make sense without passthrough, covering what a
# client can check: discovery of every device and sysfs file on every
# instance profile, chunk and host-chunk mmap coherent both ways, DMA
# rings, notification queues mapped and written, exec doorbells, reset
# and signals (the directfds client, also the smoke check), the
# supervisor's mmap rules and refusals, descriptors across fork, dup and
# a low descriptor limit, a storm of killed clients, unprivileged clients
# and signal forwarding; and mount refusing to start without passthrough
# unless given --degraded-mmap; the pytest plugin's suite in a host as
# root, as nobody rootless and in a container's conditions (the test
# binary runs in /tmp, where ../../python is the guest's /python). Not
# here: TestRunCharacterDevicesPythonAndC (the guest has no compiler; the
# container phase runs both clients itself), lspci, and the other mount
# tests and the tools (they need passthrough); TestRunChardevOpenStorm
# works but takes a minute under TCG.
# The supervisor's pins of a killed caller, a client's resize routes and
# what ends with run are checked here too, on a kernel without thread pidfds.
default_run='^(TestRunDeviceFDs|TestRunDeviceFDsNeedChardev|TestRunDeviceFDsRefusals|TestRunDeviceFDsChecksMmap|TestRunDeviceFDsStorm|TestRunChecksMmap|TestRunChecksEveryDevice|TestRunCharacterDevices|TestRunChardevDupFollowed|TestRunChardevLowFDLimit|TestRunSupervisorLookupWaitsForAnOpen|TestRunLeavesHostAloneWhileRunning|TestRunExitStatus|TestRunAsUnprivilegedUser|TestRunForwardsSIGUSR1|TestRunStartFailureNamesCommand|TestMountWithoutPassthrough|TestRunPinnedCaller|TestRunDeviceFDsResizeRoutes|TestRunKilledStopsProgram|TestRunDaemonKilledStopsProgram|TestPytestPlugin|TestPytestPluginRootless|TestPytestPluginContainer)$'
run_pattern=${NEURONFS_VMTEST_RUN:-$default_run}
# As uid 65534 run is rootless: a user namespace, FUSE mounted in it,
# whiteout stand-ins for /dev/neuronN and every device descriptor from the
# supervisor. The same list but for what needs root or a real device
# node: TestRunCharacterDevices and TestRunChardevDupFollowed compare
# stat of /dev/neuronN (a whiteout, 0:0, without root) with the device;
# TestRunSupervisorLookupWaitsForAnOpen has its client mount FUSE as
# root. TestRunChecksMmap expects no capabilities by default here, and
# TestNotRootIsOneLine checks that mount, mount --host and cleanup refuse.
default_unprivileged_run='^(TestRunDeviceFDs|TestRunDeviceFDsNeedChardev|TestRunDeviceFDsRefusals|TestRunDeviceFDsChecksMmap|TestRunDeviceFDsStorm|TestRunChecksMmap|TestRunChecksEveryDevice|TestRunChardevLowFDLimit|TestRunLeavesHostAloneWhileRunning|TestRunExitStatus|TestRunAsUnprivilegedUser|TestRunForwardsSIGUSR1|TestRunStartFailureNamesCommand|TestNotRootIsOneLine)$'
# With /dev/fuse removed and user namespaces disabled, as uid 65534 (an
# unprivileged container), run takes the filter host view: the tests that
# make sense without a mount. TestRunContainer checks the paths a program
# finds the devices by, TestRunShellRedirect a shell's redirects into
# attributes (busybox sh, as /bin/sh and by name); the rest as in the
# unprivileged phase, where they need no FUSE mount of their own.
default_container_run='^(TestRunContainer|TestRunShellRedirect|TestRunDeviceFDs|TestRunChecksEveryDevice|TestRunExitStatus|TestRunStartFailureNamesCommand|TestRunChecksMmap|TestRunAsUnprivilegedUser|TestRunForwardsSIGUSR1|TestRunDeviceFDsRefusals)$'
cache=${NEURONFS_VMTEST_CACHE:-${XDG_CACHE_HOME:-/var/cache}/neuronfs-vmtest}
arch=${NEURONFS_VMTEST_ARCH:-amd64}
if [ "$arch" = arm64 ]; then
	boot_timeout=${NEURONFS_VMTEST_TIMEOUT:-4800} test_timeout=${NEURONFS_VMTEST_TEST_TIMEOUT:-45m}
else
	boot_timeout=${NEURONFS_VMTEST_TIMEOUT:-1800} test_timeout=${NEURONFS_VMTEST_TEST_TIMEOUT:-15m}
fi
# The guest by architecture: QEMU's binary and its package, the machine,
# the console.
case $arch in
amd64) qemu=qemu-system-x86_64 qemu_pkg=qemu-system-x86 qemu_machine="-machine q35 -cpu max" console=ttyS0 ;;
arm64) qemu=qemu-system-aarch64 qemu_pkg=qemu-system-arm qemu_machine="-machine virt -cpu cortex-a72" console=ttyAMA0 ;;
*) echo "vmtest: NEURONFS_VMTEST_ARCH=$arch: amd64 or arm64" >&2 && exit 1 ;;
esac
# apt for the guest's packages: the host's own for amd64; for arm64 the
# same sources' arm64 lists, kept in the cache.
apt_opts=()
if [ "$arch" != amd64 ]; then
	aptdir="$cache/apt-$arch"
	mkdir -p "$aptdir/lists/partial" "$aptdir/archives/partial"
	touch "$aptdir/status"
	apt_opts=(-o "APT::Architecture=$arch" -o "APT::Architectures=$arch" -o "Dir::State::Lists=$aptdir/lists"
		-o "Dir::Cache=$aptdir" -o "Dir::State::status=$aptdir/status")
	# No list until the first update (apt may keep them compressed).
	ls "$aptdir/lists"/*_Packages* >/dev/null 2>&1 || apt-get "${apt_opts[@]}" update -qq ||
		{ echo "vmtest: apt-get update of the $arch lists failed" >&2 && exit 1; }
fi
marker=VMTEST-RESULT

say() { echo "vmtest: $*" >&2; }
die() {
	say "$*"
	exit 1
}

# Tools, installed only when missing.
missing=""
command -v "$qemu" >/dev/null || missing="$missing $qemu_pkg"
# busybox-static and busybox both provide /bin/busybox; the guest needs
# the static one.
if [ "$arch" = amd64 ]; then
	dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'ok installed' || missing="$missing busybox-static"
fi
command -v cpio >/dev/null || missing="$missing cpio"
[ -x /usr/bin/python3 ] || missing="$missing python3"
/usr/bin/python3 -c 'import pytest' 2>/dev/null || missing="$missing python3-pytest"
if [ -n "$missing" ]; then
	[ "$(id -u)" = 0 ] || die "missing packages:$missing (install them, or run as root)"
	say "installing$missing"
	apt-get update -qq && apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
for f in "$qemu" cpio go; do
	command -v "$f" >/dev/null || die "$f not found"
done

# The kernel package: the one the cloud metapackage depends on when that
# is a 6.1 kernel (Debian 12), else the newest 6.1 cloud image known to apt.
kernel_candidates() {
	apt-cache "${apt_opts[@]}" depends "linux-image-cloud-$arch" 2>/dev/null |
		sed -n "s/^ *Depends: \(linux-image-6\.1\.0-[0-9]*-cloud-$arch\(-unsigned\)\?\)\$/\1/p"
	apt-cache "${apt_opts[@]}" search --names-only "^linux-image-6\.1\.0-[0-9]+-cloud-$arch(-unsigned)?\$" 2>/dev/null |
		awk '{print $1}' | sort -V -r
}
kpkg=${NEURONFS_VMTEST_KERNEL:-}
if [ -z "$kpkg" ]; then
	kpkg=$(kernel_candidates | sed -n 1p)
	if [ -z "$kpkg" ] && [ "$(id -u)" = 0 ]; then
		apt-get update -qq
		kpkg=$(kernel_candidates | sed -n 1p)
	fi
fi
[ -n "$kpkg" ] || die "no linux-image-6.1.0-N-cloud-$arch package known to apt (a Debian 12 source is needed)"
kver=$(apt-cache "${apt_opts[@]}" policy "$kpkg" | sed -n 's/^ *Candidate: //p')
[ -n "$kver" ] && [ "$kver" != "(none)" ] || die "$kpkg has no candidate version"

tmp=$(mktemp -d)
qemu_pid=""
cleanup() {
	if [ -n "$qemu_pid" ]; then
		kill "$qemu_pid" 2>/dev/null || true
		wait "$qemu_pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The cache holds, per kernel package and version, its vmlinuz, config and
# the FUSE module with what it depends on (in load order).
kdir="$cache/${kpkg}_$kver"
if [ ! -s "$kdir/vmlinuz" ] || [ ! -e "$kdir/modules.order" ]; then
	t0=$SECONDS
	say "fetching $kpkg $kver"
	mkdir -p "$tmp/deb" "$cache"
	(cd "$tmp/deb" && apt-get "${apt_opts[@]}" download -qq -o APT::Sandbox::User=root "$kpkg=$kver") ||
		die "apt-get download $kpkg=$kver failed"
	dpkg-deb -x "$tmp/deb"/*.deb "$tmp/deb/x"
	staging="$cache/.staging.$$"
	rm -rf "$staging"
	mkdir -p "$staging/modules"
	cp "$tmp/deb/x"/boot/vmlinuz-* "$staging/vmlinuz"
	cp "$tmp/deb/x"/boot/config-* "$staging/config"
	moddir=$(echo "$tmp/deb/x"/lib/modules/*)
	# A module's dependencies are in its .modinfo strings ("depends=a,b");
	# the package has no modules.dep (depmod makes it on install).
	declare -A seen=()
	load() {
		local name=$1 ko dep
		[ -n "${seen[$name]:-}" ] && return
		seen[$name]=1
		ko=$(find "$moddir/kernel" \( -name "$name.ko" -o -name "${name//_/-}.ko" \) -print -quit)
		[ -n "$ko" ] || die "module $name not in $kpkg"
		for dep in $(tr '\0' '\n' <"$ko" | sed -n 's/^depends=//p' | tr ',' ' '); do
			load "$dep"
		done
		cp "$ko" "$staging/modules/"
		basename "$ko" >>"$staging/modules.order"
	}
	: >"$staging/modules.order"
	if grep -q '^CONFIG_FUSE_FS=m' "$staging/config"; then
		load fuse
	fi
	rm -rf "$kdir"
	mv "$staging" "$kdir"
	rm -rf "$tmp/deb"
	# Older versions' directories are of no further use (the other
	# architecture's kernel and apt lists are kept).
	find "$cache" -mindepth 1 -maxdepth 1 -type d -name "linux-image-*-$arch*" ! -path "$kdir" -exec rm -rf {} +
	say "kernel fetched and unpacked in $((SECONDS - t0)) s"
fi

# busybox-static for another architecture, unpacked into the cache.
busybox=/bin/busybox
if [ "$arch" != amd64 ]; then
	busybox="$cache/busybox-$arch/bin/busybox"
	if [ ! -x "$busybox" ]; then
		mkdir -p "$tmp/bb"
		(cd "$tmp/bb" && apt-get "${apt_opts[@]}" download -qq -o APT::Sandbox::User=root busybox-static) ||
			die "apt-get download busybox-static ($arch) failed"
		dpkg-deb -x "$tmp/bb"/busybox-static_*.deb "$cache/busybox-$arch"
	fi
fi

# Static binaries: the guest has no libc.
t0=$SECONDS
root="$tmp/root"
mkdir -p "$root"/{bin,dev,proc,sys,tmp,etc,lib/modules}
CGO_ENABLED=0 GOARCH=$arch go build -o "$root/bin/neuronfs" ./cmd/neuronfs
CGO_ENABLED=0 GOARCH=$arch go test -c -o "$root/bin/neuronfs.test" ./cmd/neuronfs
# The C device-opening client (the one TestRunCharDevice builds), for the
# container phase; the guest has no compiler. Not for another
# architecture: no cross compiler is assumed.
if [ "$arch" = amd64 ]; then
	gcc -static -O2 -o "$root/bin/chardev_check" cmd/neuronfs/testdata/chardev_check.c ||
		die "gcc -static cmd/neuronfs/testdata/chardev_check.c failed (Debian: gcc, libc6-dev)"
fi
# ldd (libc-bin, always there) fails on a static executable (and on
# another architecture's).
for f in "$root/bin/neuronfs" "$root/bin/neuronfs.test" "$root"/bin/chardev_check "$busybox"; do
	if [ -e "$f" ] && ldd "$f" >/dev/null 2>&1; then
		die "$f is dynamically linked; the guest has no libc"
	fi
done
cp "$busybox" "$root/bin/busybox"
# Python with the modules its clients import, its libraries, the Python
# device-opening client and the pytest plugin's suite: the host's own
# interpreter, so an amd64 guest only.
if [ "$arch" = amd64 ]; then
	scripts/vmtest-python.sh "$root" || die "scripts/vmtest-python.sh failed"
fi
cp "$kdir"/modules/*.ko "$root/lib/modules/" 2>/dev/null || true
cp "$kdir/modules.order" "$root/lib/modules/"
echo 'root:x:0:0:root:/tmp:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/sh' >"$root/etc/passwd"
echo 'root:x:0:
nogroup:x:65534:' >"$root/etc/group"
{
	printf 'VMTEST_RUN=%q\n' "$run_pattern"
	printf 'VMTEST_UNPRIVILEGED=%q\n' "${VMTEST_UNPRIVILEGED:-1}"
	printf 'VMTEST_UNPRIVILEGED_RUN=%q\n' "${NEURONFS_VMTEST_UNPRIVILEGED_RUN:-$default_unprivileged_run}"
	printf 'VMTEST_CONTAINER=%q\n' "${VMTEST_CONTAINER:-1}"
	printf 'VMTEST_CONTAINER_RUN=%q\n' "${NEURONFS_VMTEST_CONTAINER_RUN:-$default_container_run}"
	printf 'VMTEST_MARKER=%q\n' "$marker"
	printf 'VMTEST_TEST_TIMEOUT=%q\n' "$test_timeout"
} >"$root/etc/vmtest.env"
cp scripts/vmtest-init.sh "$root/init"
chmod 755 "$root/init"
(cd "$root" && find . -print0 | cpio --null -o -H newc --quiet | gzip -1) >"$tmp/initrd.gz"
say "binaries and initramfs ($(du -h "$tmp/initrd.gz" | cut -f1)) built in $((SECONDS - t0)) s"

# Plain TCG: nested KVM is not to be relied on. panic=-1 and -no-reboot
# end QEMU if init dies; init powers off whatever happens. no_timer_check:
# on a loaded host the kernel's check that the IO-APIC timer ticks can
# miss TCG's ticks and panic ("IO-APIC + timer doesn't work", seen here).
t0=$SECONDS
log="$tmp/console.log"
: >"$log"
say "booting $kpkg $kver (TCG)"
# shellcheck disable=SC2086 # qemu_machine is words
timeout --kill-after=10 "$boot_timeout" "$qemu" \
	-accel tcg $qemu_machine -smp 2 -m 2048 \
	-nographic -no-reboot -nodefaults -serial stdio \
	-kernel "$kdir/vmlinuz" -initrd "$tmp/initrd.gz" \
	-append "console=$console panic=-1 no_timer_check quiet loglevel=3" \
	</dev/null >"$log" 2>&1 &
qemu_pid=$!
tail -n +1 -f --pid="$qemu_pid" "$log" | tr -d '\r' >&2 &
status=0
wait "$qemu_pid" || status=$?
qemu_pid=""
wait || true
say "guest ran for $((SECONDS - t0)) s"
if [ "$status" = 124 ] || [ "$status" = 137 ]; then
	die "the guest did not finish within ${boot_timeout} s"
fi
result=$(tr -d '\r' <"$log" | sed -n "s/^$marker: //p" | tail -n1)
case $result in
PASS) say "guest: PASS" ;;
FAIL*) die "guest: $result" ;;
*) die "the guest printed no $marker line (QEMU exit status $status)" ;;
esac
