"""Inside the child process: install the virtual accelerator, run the script as `python script.py`
would (or `python -m module`), and leave the findings and how the run ended in a JSON file.

    python -m devflow.dryrun.child OUT.json GPUS MAX_STEPS TIMEOUT META_ABOVE (script|-m module) [args...]
"""

from __future__ import annotations

import os
import re
import runpy
import sys
import time
import traceback

DEVICE_ERROR = re.compile(
    r"Expected all tensors to be on the same device|is not on the expected device|indices should be either on cpu"
    r"|Input type \(.*\) and (weight|bias) type|module must have its parameters and buffers on device"
    r"|Expected object of (device type|backend)|must be CUDA tensors|must have same dtype, device|"
    r"Attempting to deserialize object on a CUDA device|device type for generator|DistributedDataParallel device_ids"
    r"|Encountered different devices|Input and hidden tensors are not at the same device|can't convert cuda"
    r"|Cannot re-initialize CUDA|Expected a .cuda. device|found at least two devices|on different GPUs"
    r"|expected (the )?(input|hidden|weight).* device|same device")


def install(gpus: int, meta_above: int | None):
    import torch

    from devflow.dryrun import cuda_api, dispatch, script_archives, vtensor, wrappers

    dispatch.Settings.devices = gpus
    dispatch.Settings.meta_above = meta_above
    vtensor.install_data_property()
    cuda_api.install_cuda_module()
    cuda_api.install_moves()
    cuda_api.install_autocast()
    wrappers.install_serialization()
    wrappers.install_parallel()
    wrappers.install_compile()
    script_archives.install()
    wrappers.install_dataloader()
    import warnings
    warnings.filterwarnings("ignore", message=".*(GradScaler|autocast|CUDA|cuda).*")
    return torch


def main(argv: list[str]) -> int:
    out_path, gpus, max_steps, timeout, meta_above = argv[:5]
    rest = argv[5:]
    from devflow.dryrun import recorder
    from devflow.dryrun.limits import Limits, StopDryRun

    rec = recorder.RECORDER
    rec.out_path = out_path
    install(int(gpus), int(meta_above) if meta_above != "-" else None)
    from devflow.dryrun import spawned
    spawned.install(out_path, int(gpus), int(meta_above) if meta_above != "-" else None)
    from devflow.dryrun.dispatch import DeviceMode

    limits = Limits(int(max_steps) or None, float(timeout) or None)
    if rest[0] == "-m":
        module, args = rest[1], rest[2:]
        sys.argv = [module] + args
        target = None
    else:
        module, target, args = None, os.path.abspath(rest[0]), rest[1:]
        sys.argv = [target] + args
        sys.path[0] = os.path.dirname(target)
    status: dict = {"state": "finished", "steps": 0}
    start = time.perf_counter()
    first = {}

    orig_add = rec.add

    def add(*a, **k):  # time to first finding, for the report and bench/dryrun.py
        first.setdefault("t", time.perf_counter() - start)
        return orig_add(*a, **k)

    rec.add = add
    limits.install()
    from devflow.dryrun.dispatch import Settings
    Settings.used_cuda = False  # the emulation's own setup (default generators) does not count
    try:
        with DeviceMode():
            if module:
                runpy.run_module(module, run_name="__main__", alter_sys=True)
            else:
                runpy.run_path(target, run_name="__main__")
    except StopDryRun as e:
        status.update(state="stopped", reason=e.reason)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) or e.code is None else 1
        status.update(state="finished" if not code else "exit", exit_code=code or 0)
        if isinstance(e.code, str):
            status["message"] = e.code
    except KeyboardInterrupt:
        status.update(state="interrupted")
    except BaseException as e:  # noqa: BLE001 - the user's script raised: report where
        _script_error(e, rec, status)
    finally:
        limits.cancel()
        from devflow.dryrun import wrappers
        wrappers.flush()
    status["steps"] = limits.steps - limits.skipped
    status["skipped_steps"] = limits.skipped
    status["elapsed_s"] = round(time.perf_counter() - start, 3)
    if "t" in first:
        status["first_finding_s"] = round(first["t"], 3)
    rec.save(status)
    return 0


def _script_error(e: BaseException, rec, status: dict):
    from devflow.dryrun import recorder

    tb = traceback.extract_tb(e.__traceback__)
    frames = [(f.filename, f.lineno, f.name) for f in reversed(tb) if recorder.is_user_file(f.filename)]
    traceback.print_exception(e, file=sys.stderr)
    text = f"{type(e).__name__}: {e}"
    status.update(state="error", exception=text.splitlines()[0] if text else type(e).__name__,
                  traceback="".join(traceback.format_exception(e))[-4000:])
    if frames:
        status.update(path=frames[0][0], line=frames[0][1])
    if DEVICE_ERROR.search(str(e)):
        rec.add("DEV907", str(e).strip().splitlines()[0], type(e).__name__, [], frames or None)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
