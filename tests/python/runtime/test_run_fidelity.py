"""`devflow run script.py` behaves exactly like `python script.py`: the same exit status (or death
by the same signal), the same stdout and the same stderr, apart from the placement report printed
before the traceback of a cross-device error.  Compared with plain python on the scripts generated
below (odd exceptions, exit codes, signals, closed streams, hostile __getattr__ / __repr__ /
__torch_function__ objects, shutdown-time output)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

# A cross-device error on the meta device, and hostile objects in scope while the probe runs.
DEVICE = """
import torch
model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 2)).to("meta")
batch = torch.randn(3, 4)
"""
FAIL = "model(batch)\n"

HOSTILE_GETATTR = """
class Hostile:
    def __getattr__(self, name):
        raise {exc}
    def __getattribute__(self, name):
        if name in ("__dict__", "__class__"):
            raise {exc}
        return object.__getattribute__(self, name)
"""

SCRIPTS: dict[str, str] = {
    "ok": "print('hello')\n",
    "exit0": "import sys\nsys.exit(0)\n",
    "exit3": "import sys\nprint('out')\nsys.exit(3)\n",
    "exit_none": "raise SystemExit\n",
    "exit_str": "import sys\nsys.exit('bye: not an int')\n",
    "exit_true": "import sys\nsys.exit(True)\n",
    "exit_256": "import sys\nsys.exit(256)\n",
    "exit_negative": "import sys\nsys.exit(-1)\n",
    "exit_tuple": "import sys\nsys.exit(('a', 1))\n",
    "exit_nested": "def f():\n    raise SystemExit(9)\ndef g():\n    f()\ng()\n",
    "exit_in_finally": "try:\n    raise ValueError('x')\nfinally:\n    raise SystemExit(4)\n",
    "value_error": "def f():\n    raise ValueError('bad value')\nf()\n",
    "chained_cause": "try:\n    1/0\nexcept ZeroDivisionError as e:\n    raise KeyError('k') from e\n",
    "chained_context": "try:\n    [][1]\nexcept IndexError:\n    raise RuntimeError('during handling')\n",
    "unicode_message": "raise RuntimeError('ünïcödé ✓ message')\n",
    "str_raises": "class E(Exception):\n    def __str__(self):\n        raise ValueError('no str')\nraise E()\n",
    "custom_base": "class Stop(BaseException):\n    pass\nraise Stop('custom base')\n",
    "keyboard_interrupt": "print('before', flush=True)\nraise KeyboardInterrupt\n",
    "keyboard_interrupt_nested": "def f():\n    raise KeyboardInterrupt('deep')\nf()\n",
    "sigint_self": "import os, signal, time\nos.kill(os.getpid(), signal.SIGINT)\ntime.sleep(5)\n",
    "sigterm_self": "import os, signal, time\nos.kill(os.getpid(), signal.SIGTERM)\ntime.sleep(5)\n",
    "os_exit": "import os\nprint('x', flush=True)\nos._exit(5)\n",
    "closed_stdout": "import sys\nprint('a')\nsys.stdout.close()\n",
    "closed_stdout_error": "import sys\nsys.stdout.close()\nraise ValueError('after close')\n",
    "closed_stderr_error": "import sys\nsys.stderr.close()\nraise ValueError('nowhere')\n",
    "fd1_closed": "import os\nprint('buffered')\nos.close(1)\n",
    "atexit_print": "import atexit\natexit.register(lambda: print('at exit'))\nprint('main')\n",
    "atexit_raises": "import atexit\ndef h():\n    raise ValueError('in atexit')\natexit.register(h)\n",
    "atexit_after_error": "import atexit\natexit.register(lambda: print('cleanup'))\nraise ValueError('x')\n",
    "thread_after_main": "import threading, time\ndef w():\n    time.sleep(0.2)\n    print('thread done')\nthreading.Thread(target=w).start()\nprint('main done')\n",
    "excepthook_custom": "import sys\nsys.excepthook = lambda t, v, tb: print('custom hook:', t.__name__, v, file=sys.stderr)\nraise ValueError('hooked')\n",
    "excepthook_raises": "import sys\ndef h(t, v, tb):\n    raise TypeError('hook broke')\nsys.excepthook = h\nraise ValueError('orig')\n",
    "dunder": "import sys, os\nprint(__name__, os.path.basename(__file__), os.path.isabs(__file__), sys.argv[1:])\n",
    "sys_path0": "import sys, os\nprint(os.path.basename(sys.path[0]) == os.path.basename(os.path.dirname(os.path.abspath(__file__))))\n",
    "sibling_import": "import helper_mod\nprint(helper_mod.VALUE)\n",
    "pickle_main": "import pickle\nclass P:\n    pass\nprint(type(pickle.loads(pickle.dumps(P()))).__name__)\n",
    "warning": "import warnings\nwarnings.warn('careful')\nprint('after')\n",
    "stdin_eof": "input()\n",
    "syntax_error": "x = (\n",
    "indentation_error": "def f():\nreturn 1\n",
    "recursion": "def f(n):\n    return f(n + 1)\nf(0)\n",
    "generator_error": "def g():\n    yield 1\n    raise StopIteration\nlist(g())\n",
    "exception_group": "raise ExceptionGroup('many', [ValueError('a'), TypeError('b')])\n",
    "del_at_shutdown": "class D:\n    def __del__(self):\n        raise ValueError('in __del__')\nd = D()\n",
    "big_output": "for i in range(20000):\n    print(i)\n",
    "stderr_output": "import sys\nsys.stderr.write('to stderr\\n')\nprint('to stdout')\n",
    # cross-device errors: same status and output, the report added before the traceback
    "device_error": DEVICE + FAIL,
    "device_error_caught": DEVICE + "try:\n    model(batch)\nexcept RuntimeError:\n    print('handled')\n",
    "device_error_keyboard": DEVICE + "try:\n    model(batch)\nexcept RuntimeError:\n    raise KeyboardInterrupt\n",
    "hostile_getattr_keyboard": DEVICE + HOSTILE_GETATTR.format(exc="KeyboardInterrupt") + "h = Hostile()\n" + FAIL,
    "hostile_getattr_systemexit": DEVICE + HOSTILE_GETATTR.format(exc="SystemExit(9)") + "h = Hostile()\n" + FAIL,
    "hostile_getattr_valueerror": DEVICE + HOSTILE_GETATTR.format(exc="ValueError('no')") + "h = [Hostile()]\n" + FAIL,
    "hostile_repr": DEVICE + "class R:\n    def __repr__(self):\n        raise KeyboardInterrupt\n    __str__ = __repr__\nr = {R(): R()}\n" + FAIL,
    "hostile_property": DEVICE + "class P:\n    @property\n    def weight(self):\n        raise SystemExit(7)\np = P()\n" + FAIL,
    "hostile_torch_function": DEVICE + textwrap.dedent("""\
        class Evil(torch.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                if getattr(func, "__name__", "") in ("device", "nbytes", "shape", "__get__", "dtype", "nelement"):
                    raise KeyboardInterrupt
                return super().__torch_function__(func, types, args, kwargs or {})
        evil = torch.zeros(2).as_subclass(Evil)
        """) + FAIL,
    "hostile_module_getattr": DEVICE + textwrap.dedent("""\
        class BadModule(torch.nn.Module):
            def named_modules(self, *a, **k):
                raise SystemExit(3)
        bad = BadModule()
        """) + FAIL,
}

TORCH_SCRIPTS = {k for k, v in SCRIPTS.items() if "import torch" in v}
SIGNAL_SCRIPTS = {"keyboard_interrupt", "keyboard_interrupt_nested", "sigint_self", "sigterm_self", "device_error_keyboard"}
ARGS = ["--flag", "value", "ü"]


def _report_removed(stderr: str) -> str:
    """stderr without the placement report block (it ends where the traceback starts)."""
    start = stderr.find("devflow: device placement report")
    if start < 0:
        return stderr
    end = stderr.find("Traceback (most recent call last)", start)
    return stderr[:start] + (stderr[end:] if end >= 0 else "")


def _run(cmd, cwd):
    env = dict(os.environ, PYTHONWARNINGS="default", PYTHONIOENCODING="utf-8")
    env.pop("PYTHONPATH", None)
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, timeout=120, env=env, stdin=subprocess.DEVNULL)
    return p.returncode, _normal(p.stdout), _normal(p.stderr)


def _normal(data: bytes) -> str:
    """Object addresses differ from run to run; so does the reference count in CPython's fatal
    dump of an exception it cannot print (a closed stderr): devflow's frames hold the exception."""
    text = data.decode("utf-8", "replace")
    text = re.sub(r"0x[0-9a-fA-F]+", "0x?", text)
    return re.sub(r"object refcount : \d+", "object refcount : ?", text)


def _devflow_cmds(scripts_dir: Path):
    """The installed console script, and `python -m devflow` from the source checkout."""
    bin_devflow = Path(sys.executable).parent / "devflow"
    cmds = {}
    if bin_devflow.exists():
        cmds["console"] = [str(bin_devflow), "run"]
    cmds["source"] = [sys.executable, "-c",
                      f"import sys; sys.path.insert(0, {str(REPO / 'server')!r}); sys.argv[0] = 'devflow';"
                      " from devflow.cli import main; sys.exit(main())", "run"]
    return cmds


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    d = tmp_path_factory.mktemp("fidelity")
    (d / "helper_mod.py").write_text("VALUE = 42\n")
    for name, src in SCRIPTS.items():
        (d / f"{name}.py").write_text(src, encoding="utf-8")
    have_torch = True
    try:
        import torch  # noqa: F401
    except ImportError:
        have_torch = False
    jobs = {}
    cmds = _devflow_cmds(d)
    for name in SCRIPTS:
        if name in TORCH_SCRIPTS and not have_torch:
            continue
        script = f"{name}.py"
        jobs[(name, "python")] = [sys.executable, script, *ARGS]
        # the torch scripts (slow to start) through the console script only; the rest both ways
        for kind, cmd in cmds.items():
            if kind == "source" and name in TORCH_SCRIPTS and "console" in cmds:
                continue
            jobs[(name, kind)] = [*cmd, script, *ARGS]
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {k: pool.submit(_run, cmd, d) for k, cmd in jobs.items()}
        return {k: f.result() for k, f in futures.items()}, d


def test_at_least_40_scripts():
    assert len(SCRIPTS) >= 40


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_same_as_plain_python(outcomes, name):
    results, d = outcomes
    if (name, "python") not in results:
        pytest.skip("torch is not installed")
    rc, out, err = results[(name, "python")]
    for kind in ("console", "source"):
        if (name, kind) not in results:
            continue
        drc, dout, derr = results[(name, kind)]
        assert drc == rc, (kind, drc, rc, derr[-2000:])
        assert dout == out, kind
        assert _report_removed(derr) == err, (kind, derr[-3000:], err[-3000:])
        if name.startswith(("device_error", "hostile_")) and name not in ("device_error_caught", "device_error_keyboard"):
            assert "devflow: device placement report" in derr, (kind, derr[-2000:])
            # the culprit is still found with a hostile object in scope
            assert "culprit: batch" in derr or "culprit: model" in derr, derr[-3000:]
            # devflow's own frames are never the user's
            report = derr[derr.find("devflow: device placement report"):derr.find("Traceback")]
            assert "devflow" not in re.sub(r"devflow: device placement report|devflow-", "", report.split("user frames")[-1])
    if name in SIGNAL_SCRIPTS:
        assert rc < 0, "plain python dies by the signal"
