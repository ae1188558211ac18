"""Processes started with `spawn` (a DataLoader with multiprocessing_context="spawn",
set_start_method("spawn"), torch.multiprocessing.spawn) are fresh interpreters: the virtual
accelerator is installed again in each before multiprocessing's bootstrap runs, so the worker sees
the same GPUs and its findings join the run's report (as a forked worker's do).

Only `spawn` is followed; `forkserver` children are forked from a server process started without
the emulation."""

from __future__ import annotations

import atexit
import multiprocessing.spawn as mp_spawn
import os

_orig_command_line = mp_spawn.get_command_line


def install(out_path: str, gpus: int, meta_above: int | None):
    """In the dry run's process: every spawned child runs `bootstrap` first."""
    server = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    prefix = (f"import sys; sys.path.insert(0, {server!r}); from devflow.dryrun import spawned; "
              f"spawned.bootstrap({out_path!r}, {gpus}, {meta_above!r}); ")

    def get_command_line(**kwds):
        cmd = _orig_command_line(**kwds)
        if "-c" in cmd:
            i = cmd.index("-c") + 1
            cmd = cmd[:i] + [prefix + cmd[i]] + cmd[i + 1:]
        return cmd

    mp_spawn.get_command_line = get_command_line


def bootstrap(out_path: str, gpus: int, meta_above: int | None):
    """In a spawned child, before spawn_main: the emulation, active for the whole process."""
    from devflow.dryrun import child, recorder
    from devflow.dryrun.dispatch import DeviceMode, Settings

    child.install(gpus, meta_above)
    install(out_path, gpus, meta_above)  # its own spawned children too
    rec = recorder.RECORDER
    rec.worker = True
    worker_path = f"{out_path}{recorder._WORKER}{os.getpid()}"
    Settings.used_cuda = False
    DeviceMode().__enter__()  # never left: the process is the worker

    # The child re-runs the main script's top level as __mp_main__: what it finds there, the
    # parent found at the same lines already, so it is not counted twice.
    prepare = mp_spawn.prepare

    def quiet_prepare(data):
        rec.out_path = None
        try:
            prepare(data)
        finally:
            rec.findings.clear()
            rec.out_path = worker_path

    mp_spawn.prepare = quiet_prepare
    # A spawned child ends through sys.exit (a forked one through os._exit, see recorder): the
    # counts of its findings are written at interpreter exit.
    atexit.register(rec.save)
