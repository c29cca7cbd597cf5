"""Runs a Python program (a script, or -m MODULE) and then prints the file
of every module it loaded, one a line: what scripts/vmtest-python.sh
copies into the guest, so the guest's interpreter carries the standard
library modules its clients import and nothing more.

    python3 vmtest-pymods.py [--scan DIR]... SCRIPT ARGS...
    python3 vmtest-pymods.py [--scan DIR]... -m MODULE ARGS...

--scan DIR first imports every module an import statement under DIR
names, wherever it stands: a test body's import runs only in the guest.

The program may fail (there is no emulated host here): what it imported
until then is listed all the same, and a failing pytest imports more
(its failure reports) than a passing one.
"""
import ast
import atexit
import importlib
import pathlib
import runpy
import sys


def _scan(top):
    """Import what the import statements in top's .py files name (those
    of top itself, its own modules, are left to the program)."""
    for path in sorted(pathlib.Path(top).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            else:
                continue
            for name in names:
                try:
                    importlib.import_module(name)
                except ImportError:
                    pass  # the repository's own, found in the guest by path


def _main_files(name):
    """The files of module name run as __main__ (a package's __main__),
    which runpy takes out of sys.modules again."""
    import importlib.util
    spec = importlib.util.find_spec(name)
    if spec.submodule_search_locations is not None:
        spec = importlib.util.find_spec(name + ".__main__")
    return [spec.origin, spec.cached]


def _list():
    for path in _main:
        print(path, file=_out)
    for mod in list(sys.modules.values()):
        # The source, and its bytecode where the host has it: the guest
        # need not compile (slow under TCG) and cannot write a cache.
        for attr in ("__file__", "__cached__"):
            path = getattr(mod, attr, None)
            if path:
                print(path, file=_out)
    _out.flush()


_out = sys.stdout
sys.stdout = sys.stderr  # the program's output is not the list
atexit.register(_list)
args = sys.argv[1:]
while args[:1] == ["--scan"]:
    _scan(args[1])
    args = args[2:]
_main = []
if args[:1] == ["-m"]:
    _main = _main_files(args[1])
    sys.argv = [args[1]] + args[2:]
    run = lambda: runpy.run_module(args[1], run_name="__main__", alter_sys=True)
else:
    sys.argv = args
    run = lambda: runpy.run_path(args[0], run_name="__main__")
try:
    run()
except SystemExit:
    pass
except Exception as e:  # what it imported until then is still listed
    print(f"vmtest-pymods: {args}: {e!r}", file=sys.stderr)
