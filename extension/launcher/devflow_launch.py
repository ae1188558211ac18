"""Starts the devflow language server, or probes an interpreter for it, without ever importing
code from the workspace.

The client runs `python -I devflow_launch.py [--libs DIR] probe|serve [ARGS...]`. `-I` (isolated
mode, Python >= 3.4) keeps the working directory, the script's folder, PYTHONPATH, PYTHONHOME and
the user's site-packages off sys.path, so a `json.py`, `token.py` or `devflow/` package in the
opened folder is never imported (it used to be: the folder was the cwd and `-m`/`-c` put the cwd
first on sys.path). The bundled server is added here, from `--libs`, not by the environment.

`probe` is cheap on purpose (no server import; the server imports itself right after): it prints
one JSON line with the interpreter's version and which required modules are missing or have no
native part built for this interpreter. Written for old Pythons too, so a too-old interpreter
still reports its version.
"""

import json
import os
import sys

# Top-level packages the server needs, and the native extension modules that must exist for this
# interpreter (a bundle without this CPython's wheel, or a wrong-platform one, fails here).
REQUIRED = ["devflow", "pygls", "lsprotocol", "libcst", "cattrs", "attrs", "pathspec"]
NATIVE = [("libcst", "native")]


def _take_libs(argv):
    """Removes `--libs DIR` from argv and returns DIR (or None)."""
    if len(argv) >= 2 and argv[0] == "--libs":
        return argv[1], argv[2:]
    return None, argv


def _set_path(libs):
    cwd = os.getcwd()
    # -I already leaves these out; dropped again in case an old or odd interpreter ignored it.
    sys.path[:] = [p for p in sys.path if p and os.path.abspath(p) != cwd]
    if libs:
        sys.path.insert(0, os.path.abspath(libs))


def probe():
    result = {
        "version": list(sys.version_info[:3]),
        "implementation": sys.implementation.name,
        "executable": sys.executable,
        "errors": {},
        "path": sys.path,
    }
    if sys.version_info >= (3, 10):
        import importlib.machinery
        import importlib.util

        for name in REQUIRED:
            try:
                spec = importlib.util.find_spec(name)
            except Exception as e:  # a broken package: name it, never crash the probe
                spec = None
                result["errors"][name] = "%s: %s" % (type(e).__name__, e)
                continue
            if spec is None:
                result["errors"][name] = "ModuleNotFoundError: No module named %r" % name
            elif name == "devflow" and spec.origin:
                result["devflow"] = {"file": spec.origin, "version": _devflow_version(spec.origin)}
        for package, module in NATIVE:
            if package in result["errors"]:
                continue
            spec = importlib.util.find_spec(package)
            folders = list(spec.submodule_search_locations or []) if spec else []
            suffixes = importlib.machinery.EXTENSION_SUFFIXES
            if not any(os.path.exists(os.path.join(d, module + s)) for d in folders for s in suffixes):
                result["errors"][package + "." + module] = (
                    "ImportError: no %s.%s built for this interpreter (%s)" % (package, module, suffixes[0]))
    print(json.dumps(result))
    return 0


def _devflow_version(init_file):
    """`__version__` read from devflow/__init__.py without importing it."""
    try:
        with open(init_file, encoding="utf-8") as f:
            for line in f:
                if line.startswith("__version__"):
                    return line.split("=", 1)[1].strip().strip("\"'")
    except OSError:
        pass
    return "?"


def serve(args):
    try:
        from devflow.lsp.server import main
    except ImportError as e:
        sys.stderr.write("devflow: the language server cannot be imported on %s: %s: %s\n"
                         % (sys.executable, type(e).__name__, e))
        return 3
    return int(main(args) or 0)


def run(argv):
    libs, argv = _take_libs(argv)
    _set_path(libs)
    if not argv or argv[0] not in ("probe", "serve"):
        sys.stderr.write("usage: python -I devflow_launch.py [--libs DIR] probe|serve [ARGS...]\n")
        return 2
    return probe() if argv[0] == "probe" else serve(argv[1:])


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
