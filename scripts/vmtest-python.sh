#!/usr/bin/env bash
# Puts a Python interpreter into the scripts/vmtest.sh guest's root ROOT:
# the host's /usr/bin/python3 (Debian's, which python3-pytest serves), the
# shared libraries it and its extension modules need (by ldd, at their
# host paths), and of the standard library and pytest only the modules
# the guest's Python clients import, found by running them here
# (scripts/vmtest-pymods.py). Also copies the clients: the device-opening
# client to ROOT/bin/chardev_check.py and the pytest plugin with its
# suite (python/) to ROOT/python.
#
#   scripts/vmtest-python.sh ROOT
set -euo pipefail
cd "$(dirname "$0")/.."
root=${1:?usage: vmtest-python.sh ROOT}
# put FILE...: each to the same path under ROOT, the file a link names,
# with its time (a .pyc is used only if its source's time matches).
put() {
	printf '%s\n' "$@" | cpio -pdmLu --quiet "$root"
}
py=/usr/bin/python3
say() { echo "vmtest-python: $*" >&2; }
"$py" -c 'import pytest' 2>/dev/null || { say "$py cannot import pytest (Debian: python3, python3-pytest)"; exit 1; }
exe=$(readlink -f "$py")

list=$(mktemp)
trap 'rm -f "$list"' EXIT
# Both clients fail here (no emulated host): what they import is listed
# all the same.
"$py" scripts/vmtest-pymods.py cmd/neuronfs/testdata/chardev_check.py 3 none >"$list" 2>/dev/null
(cd python && PYTHONPATH=$PWD PYTHONDONTWRITEBYTECODE=1 "$py" ../scripts/vmtest-pymods.py \
	--scan . -m pytest -p pytest_neuronfs -p no:cacheprovider -v tests) >>"$list" 2>/dev/null
# The landmarks by which the interpreter finds its prefix: os.py and
# lib-dynload (else it warns and guesses).
stdlib=$("$py" -c 'import sysconfig; print(sysconfig.get_path("stdlib"))')
dynload=$("$py" -c 'import sysconfig; print(sysconfig.get_path("platstdlib"))')/lib-dynload
echo "$stdlib/os.py" >>"$list"
mkdir -p "$root$dynload"

# Only the interpreter's own files: the repository's are copied below.
mods=$(sort -u "$list" | grep -E '^/usr/(local/)?lib/python3' | while read -r f; do [ -e "$f" ] && echo "$f"; done)
put $mods
# The interpreter and every shared library it or a loaded extension
# module links (the loader at its absolute path too).
put "$exe"
ln -sf "$(basename "$exe")" "$root/usr/bin/python3"
libs=$(for f in "$exe" $(echo "$mods" | grep '\.so$'); do ldd "$f"; done |
	sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) .*/\1/p' | sort -u)
put $libs

mkdir -p "$root/bin" "$root/python"
cp cmd/neuronfs/testdata/chardev_check.py "$root/bin/chardev_check.py"
(cd python && find . -name '*.py' -print0 | cpio --null -pdmu --quiet "$root/python")
say "$(echo "$mods" | wc -l) module files, $(echo "$libs" | wc -w) libraries, $(du -sh "$root/usr" | cut -f1) under /usr"
