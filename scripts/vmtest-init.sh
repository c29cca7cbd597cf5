#!/bin/busybox sh
# /init of the scripts/vmtest.sh guest: sets up a minimal system, runs the
# checks, prints "$VMTEST_MARKER: PASS" or "$VMTEST_MARKER: FAIL <what>"
# and powers off, whatever happened.
/bin/busybox --install -s /bin
export PATH=/bin
. /etc/vmtest.env

failed=""
fail() {
	echo "vmtest: FAILED: $*"
	failed="$failed $1"
}
finish() {
	if [ -z "$failed" ]; then
		echo "$VMTEST_MARKER: PASS"
	else
		echo "$VMTEST_MARKER: FAIL$failed"
	fi
	sync
	poweroff -f
}
trap finish EXIT

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs -o mode=1777 tmpfs /tmp
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm

for m in $(cat /lib/modules/modules.order); do
	insmod "/lib/modules/$m" || fail "insmod-$m"
done
[ -e /dev/fuse ] || mknod -m 0666 /dev/fuse c 10 229
chmod 0666 /dev/fuse
# The daemon aborts a dead client's connection through the FUSE control
# file system, which the kernel expects here.
if [ -d /sys/fs/fuse/connections ]; then
	mount -t fusectl fusectl /sys/fs/fuse/connections || fail fusectl
fi

echo "vmtest: Linux $(uname -r), $(nproc) CPUs, $(sed -n 's/MemTotal: *//p' /proc/meminfo)"

# A run without root needs unprivileged user namespaces: Debian's
# kernel.unprivileged_userns_clone (1 by default since Debian 11) and a
# nonzero user.max_user_namespaces. Said, and set where they forbid it.
if [ "$VMTEST_UNPRIVILEGED" = 1 ]; then
	f=/proc/sys/kernel/unprivileged_userns_clone
	[ ! -e $f ] || [ "$(cat $f)" = 1 ] || echo 1 >$f || fail userns-clone
	f=/proc/sys/user/max_user_namespaces
	[ "$(cat $f)" != 0 ] || echo 1024 >$f || fail max-userns
	echo "vmtest: kernel.unprivileged_userns_clone=$(cat /proc/sys/kernel/unprivileged_userns_clone 2>/dev/null || echo absent) user.max_user_namespaces=$(cat $f)"
fi

export HOME=/tmp TMPDIR=/tmp
export NEURONFS_REQUIRE_FUSE=1
export NEURONFS_FUSE_TRANSPORT=classic
export NEURONFS_MEMORY_BACKING=memfd
export NEURONFS_LOCKCHECK=1

# phase NAME USER PATTERN [STORE]: the checks, as USER (root, or a user
# name for su), with the tests PATTERN matches; STORE=0 leaves out the
# compact store's check (its server mounts FUSE).
phase() {
	name=$1 user=$2 pattern=$3 with_store=${4:-1}
	as() {
		if [ "$user" = root ]; then
			"$@"
		else
			# -p keeps the environment; the command's words pass as
			# the shell's arguments, after -- so su takes none of
			# them for its own options.
			su -p -s /bin/sh -c 'exec "$@"' -- "$user" sh "$@"
		fi
	}
	cd /tmp
	echo "vmtest: [$name] as $(as id)"
	# The smoke check runs with run's defaults: the automatic transport
	# and memory backing, and the automatic device descriptors, which
	# without passthrough must be the supervisor's.
	echo "vmtest: [$name] neuronfs run --log-level=info --instance trn2.48xlarge -- neuronfs.test __client directfds"
	start=$(date +%s)
	out=$(as env -u NEURONFS_FUSE_TRANSPORT -u NEURONFS_MEMORY_BACKING \
		neuronfs run --log-level=info --instance trn2.48xlarge -- /bin/neuronfs.test __client directfds)
	st=$?
	echo "$out"
	case "$st $out" in
	"0 ok memory-file"*) ;;
	*) fail "$name-smoke" "status $st" ;;
	esac
	echo "vmtest: [$name] smoke took $(($(date +%s) - start)) s"
	# Device memory in the compact store (what a file backing on ext4
	# uses): its server's mount, coherent mmap through a FUSE file.
	[ "$with_store" = 1 ] && phase_store
	start=$(date +%s)
	as /bin/neuronfs.test -test.v -test.count=1 -test.timeout="${VMTEST_TEST_TIMEOUT:-15m}" -test.run "$pattern" || fail "$name-tests"
	echo "vmtest: [$name] tests took $(($(date +%s) - start)) s"
}

phase_store() {
	store=/tmp/store-$name
	mkdir -p "$store" && chmod 777 "$store"
	echo "vmtest: [$name] neuronfs run --memory-backing store:$store -- neuronfs.test __client directfds"
	out=$(as env -u NEURONFS_FUSE_TRANSPORT -u NEURONFS_MEMORY_BACKING \
		neuronfs run --memory-backing "store:$store" --instance trn2.3xlarge -- /bin/neuronfs.test __client directfds)
	st=$?
	echo "$out"
	case "$st $out" in
	"0 ok memory-file"*) ;;
	*) fail "$name-store" "status $st" ;;
	esac
}

# The pytest plugin's suite as a user runs it in a container: pytest as
# nobody, whose sessions' `neuronfs run` (auto) take the filter view.
container_pytest() {
	echo "vmtest: [container] python3 -m pytest -p pytest_neuronfs --neuron-instance trn2.3xlarge tests"
	start=$(date +%s)
	out=$(cd /python && su -p -s /bin/sh -c 'exec "$@"' -- nobody sh \
		env -u NEURONFS_MEMORY_BACKING PYTHONPATH=/python PYTHONDONTWRITEBYTECODE=1 NEURONFS_BIN=/bin/neuronfs \
		/usr/bin/python3 -m pytest -p pytest_neuronfs -p no:cacheprovider -v \
		--neuron-instance trn2.3xlarge --neuronfs-arg=--log-level=error tests 2>&1)
	st=$?
	echo "$out"
	[ "$st" = 0 ] || fail container-pytest "status $st"
	# Every test of the suite, in its session (as TestPytestPlugin checks).
	for t in test_devices_are_character_devices test_state_follows_an_open test_reset_failure \
		test_bad_fault_list test_runs_on_the_instance_it_asks_for test_fail_call test_fail_calls_randomly; do
		case $out in
		*"::$t PASSED"*) ;;
		*) fail container-pytest "$t did not pass" ;;
		esac
	done
	echo "vmtest: [container] pytest took $(($(date +%s) - start)) s"
}

phase root root "$VMTEST_RUN"
# The same checks as uid 65534, for when run works without root.
if [ "$VMTEST_UNPRIVILEGED" = 1 ]; then
	phase unprivileged nobody "$VMTEST_UNPRIVILEGED_RUN"
fi
# What an unprivileged container gives: no /dev/fuse, user namespaces
# disabled, uid 65534. run's auto then makes the host with the seccomp
# supervisor alone (--host-view=filter).
if [ "$VMTEST_CONTAINER" = 1 ]; then
	umount /sys/fs/fuse/connections 2>/dev/null
	rm -f /dev/fuse
	echo 0 >/proc/sys/user/max_user_namespaces || fail container-userns
	echo "vmtest: [container] /dev/fuse removed, user.max_user_namespaces=$(cat /proc/sys/user/max_user_namespaces)"
	phase container nobody "$VMTEST_CONTAINER_RUN" 0
	# The C device-opening client, built static on the host: a program
	# not in Go finds /dev/neuron3 by /proc/devices and stat, and asks
	# DEVICE_BASIC_INFO.
	# (Not in an arm64 guest: vmtest.sh builds it for amd64 only.)
	if [ -e /bin/chardev_check ]; then
		echo "vmtest: [container] neuronfs run --instance inf2.48xlarge -- chardev_check"
		out=$(su -p -s /bin/sh -c 'exec "$@"' -- nobody sh \
			env -u NEURONFS_MEMORY_BACKING neuronfs run --instance inf2.48xlarge -- /bin/chardev_check)
		st=$?
		echo "$out"
		[ "$st $out" = "0 c ok" ] || fail container-c "status $st"
	else
		echo "vmtest: [container] no chardev_check for $(uname -m): the C client is not run"
	fi
	# The Python one (cmd/neuronfs/testdata/chardev_check.py, Debian's
	# interpreter with the modules it imports; an amd64 guest only, as
	# the host's interpreter is copied): the same, and the
	# devices counted by a walk of /dev, sysfs links and the DMI name.
	if [ -x /usr/bin/python3 ]; then
		echo "vmtest: [container] neuronfs run --instance trn2.48xlarge -- python3 chardev_check.py"
		out=$(su -p -s /bin/sh -c 'exec "$@"' -- nobody sh \
			env -u NEURONFS_MEMORY_BACKING neuronfs run --instance trn2.48xlarge -- \
			/usr/bin/python3 /bin/chardev_check.py 16 trn2.48xlarge)
		st=$?
		echo "$out"
		[ "$st $out" = "0 python ok" ] || fail container-python "status $st"
		container_pytest
	else
		echo "vmtest: [container] no python3 for $(uname -m): the Python client is not run"
	fi
fi
