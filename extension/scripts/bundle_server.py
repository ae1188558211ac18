"""Bundle the devflow server and its dependencies into one folder for the VS Code extension.

libcst (and PyYAML, which it needs) ship per-CPython-version native wheels, not abi3 ones, so
the folder gets one install per supported version merged together: pure-Python files are shared,
native modules carry their version in their name (native.cpython-312-x86_64-linux-gnu.so), and
any other difference between versions is an error (it would mean a mixed install).

    python bundle_server.py --server server --out extension/bundled/libs \
        --platform linux-x64 --python 3.10 3.11 3.12 3.13 3.14
    python bundle_server.py --check extension/bundled/libs --interpreters /usr/bin/python3.12 ...
"""

from __future__ import annotations

import argparse
import filecmp
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# pip --platform tags per VS Code target; manylinux tags are listed newest first.
PLATFORM_TAGS = {
    "linux-x64": ["manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64"],
    "linux-arm64": ["manylinux_2_28_aarch64", "manylinux_2_17_aarch64", "manylinux2014_aarch64"],
    "darwin-x64": ["macosx_10_13_x86_64", "macosx_10_12_x86_64", "macosx_10_9_x86_64"],
    "darwin-arm64": ["macosx_11_0_arm64"],
    "win32-x64": ["win_amd64"],
}
DEFAULT_PYTHONS = ["3.10", "3.11", "3.12", "3.13", "3.14"]
# Imported with `python -S` (no site-packages) to prove the folder is self-contained.
CHECK_IMPORTS = "import devflow, devflow.lsp, devflow.runtime, pygls.lsp.server, lsprotocol.types, libcst, libcst.native, yaml"


VERBOSE = False


def run(cmd: list[str]) -> None:
    """Runs pip quietly (its build backend's notices too); the command is shown with --verbose or
    when it fails."""
    if VERBOSE:
        print("+", " ".join(cmd), flush=True)
    import os
    proc = subprocess.run(cmd, env={**os.environ, "PYTHONWARNINGS": "ignore"}, capture_output=not VERBOSE, text=True)
    if proc.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{proc.stdout or ''}{proc.stderr or ''}")


def build_wheel(server: Path, work: Path) -> Path:
    out = work / "wheel"
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(server.resolve())])
    wheels = list(out.glob("devflow-*.whl"))
    if len(wheels) != 1:
        sys.exit(f"expected one devflow wheel in {out}, found {wheels}")
    return wheels[0]


def install_for(wheel: Path, version: str, platform: str, target: Path) -> None:
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-compile", "--target", str(target),
           "--only-binary=:all:", "--implementation", "cp", "--python-version", version]
    for tag in PLATFORM_TAGS[platform]:
        cmd += ["--platform", tag]
    run(cmd + [str(wheel)])
    for _ in range(5):  # pip skipped marker-gated requirements of the target version: add them
        missing = missing_requirements(target, version, platform)
        if not missing:
            return
        run(cmd + ["--upgrade-strategy", "only-if-needed"] + missing)
    sys.exit(f"could not complete the requirements for Python {version}: {missing}")


def marker_env(version: str, platform: str) -> dict[str, str]:
    system = {"linux": "Linux", "darwin": "Darwin", "win32": "Windows"}[platform.split("-")[0]]
    machine = {"x64": "x86_64", "arm64": "aarch64" if system == "Linux" else "arm64"}[platform.split("-")[1]]
    return {"python_version": version, "python_full_version": version + ".0", "implementation_name": "cpython",
            "platform_python_implementation": "CPython", "sys_platform": platform.split("-")[0],
            "platform_system": system, "platform_machine": machine, "os_name": "nt" if system == "Windows" else "posix"}


def missing_requirements(target: Path, version: str, platform: str) -> list[str]:
    """Requirements the target version needs that pip skipped: pip evaluates environment markers
    (e.g. `tomli; python_version < "3.11"`) against the interpreter running it, not --python-version."""
    from pip._vendor.packaging.requirements import Requirement
    from pip._vendor.packaging.utils import canonicalize_name

    env = marker_env(version, platform)
    installed = {canonicalize_name(d.name[: -len(".dist-info")].rpartition("-")[0]) for d in target.glob("*.dist-info")}
    missing = []
    for meta in target.glob("*.dist-info/METADATA"):
        for line in meta.read_text(encoding="utf-8").splitlines():
            if not line.startswith("Requires-Dist:"):
                continue
            req = Requirement(line.split(":", 1)[1].strip())
            if req.marker is not None and not req.marker.evaluate({**env, "extra": ""}):
                continue
            if canonicalize_name(req.name) not in installed:
                missing.append(str(req).split(";")[0].strip())
    return sorted(set(missing))


def merge(src: Path, dest: Path, version: str) -> None:
    """Copies `src` into `dest`; a differing file is only allowed inside *.dist-info (wheel tags)."""
    for path in sorted(src.rglob("*")):
        rel = path.relative_to(src)
        if "__pycache__" in rel.parts or rel.parts[0] == "bin":
            continue
        target = dest / rel
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        elif not target.exists():
            shutil.copy2(path, target)
        elif not filecmp.cmp(path, target, shallow=False) and not rel.parts[0].endswith(".dist-info"):
            sys.exit(f"Python {version} resolved a different {rel} than the other versions; pin that dependency")
    projects: dict[str, str] = {}
    for info in dest.glob("*.dist-info"):
        name, _, ver = info.name[: -len(".dist-info")].partition("-")
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in projects and projects[key] != ver:
            sys.exit(f"two versions of {name} in the bundle ({projects[key]}, {ver}); pin it")
        projects[key] = ver


def bundle(args: argparse.Namespace) -> None:
    out = Path(args.out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="devflow-bundle-") as tmp:
        work = Path(tmp)
        wheel = build_wheel(Path(args.server), work)
        for version in args.python:
            target = work / f"cp{version.replace('.', '')}"
            install_for(wheel, version, args.platform, target)
            merge(target, out, version)
    natives = sorted(p.name for p in out.rglob("*.so")) + sorted(p.name for p in out.rglob("*.pyd"))
    manifest = {"platform": args.platform, "pythons": args.python, "native": natives,
                "packages": sorted(p.name[: -len(".dist-info")] for p in out.glob("*.dist-info"))}
    (out / "devflow-bundle.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"== bundled the devflow server for CPython {', '.join(args.python)} ({args.platform}) in {out}: "
          f"{', '.join(manifest['packages'])}")


def check(args: argparse.Namespace) -> None:
    """Imports the server from the bundle, without site-packages, on each given interpreter."""
    failed = []
    real: list[str] = []
    for exe in args.interpreters:  # resolve launchers (pyenv shims...) to the interpreter itself
        found = subprocess.run([exe, "-c", "import sys; print(sys.executable)"], capture_output=True, text=True)
        path = found.stdout.strip()
        if found.returncode != 0 or not path:
            print(f"{exe}: skipped (does not run here)")
            continue
        if path not in real:
            real.append(path)
    for exe in real:
        proc = subprocess.run([exe, "-S", "-c", CHECK_IMPORTS + "; import sys; print(sys.version.split()[0])"],
                              env={"PYTHONPATH": str(Path(args.check).resolve()), "PATH": "/usr/bin:/bin"},
                              capture_output=True, text=True)
        status = proc.stdout.strip() if proc.returncode == 0 else "FAILED " + proc.stderr.strip().splitlines()[-1:][0]
        print(f"{exe}: {status}")
        if proc.returncode != 0:
            failed.append(exe)
    if failed:
        sys.exit(f"bundle does not import on: {', '.join(failed)}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--server", default="server", help="the devflow project folder (with pyproject.toml)")
    p.add_argument("--out", default="extension/bundled/libs")
    p.add_argument("--platform", default="linux-x64", choices=sorted(PLATFORM_TAGS))
    p.add_argument("--python", nargs="+", default=DEFAULT_PYTHONS, help="CPython versions to carry native wheels for")
    p.add_argument("--check", metavar="LIBS", help="instead of bundling, import the bundle in LIBS")
    p.add_argument("--interpreters", nargs="*", default=[sys.executable])
    p.add_argument("--verbose", action="store_true", help="show the pip commands and their output")
    args = p.parse_args()
    global VERBOSE
    VERBOSE = args.verbose
    check(args) if args.check else bundle(args)


if __name__ == "__main__":
    main()
