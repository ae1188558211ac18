"""Run corpus cases under `devflow run` with meta_run.py's CUDA -> meta rewrite, all in one process.

    python corpus_driver.py META_RUN_PY OUT_DIR CASES_JSON

CASES_JSON: [{"id", "dir", "mode": "plain"|"strict"|"native", "args": [...], "setup": [steps]}].
For each case: replay the setup steps (fixture / cpu / native runs that write checkpoints), rewrite
buggy.py as meta_run.py does, then call devflow.runtime.cli.main(["--report-json", ...]) inside
meta_run's device-check mode.  Writes OUT_DIR/<id>.json = {"rc", "report"?, "stderr"}.
One process for every case: importing torch once keeps the suite fast.
"""

import contextlib
import importlib.util
import io
import json
import os
import runpy
import sys
import tempfile


def load_meta_run(path):
    spec = importlib.util.spec_from_file_location("meta_run", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run_setup(meta_run, case_dir, workdir, step):
    script = os.path.join(case_dir, step.get("script") or "buggy.py")
    sys.path.insert(0, case_dir)  # fixtures import the case's own modules
    args = step.get("args") or []
    if step.get("role") == "fixture" or step.get("mode") == "native":
        run_path = script
    else:  # "cpu": cuda -> cpu rewrite
        src_dir = tempfile.mkdtemp(prefix="devflow_setup_")
        run_path = os.path.join(src_dir, os.path.basename(script))
        with open(script) as f:
            src = f.read()
        with open(run_path, "w") as f:
            f.write(meta_run.rewrite(src, meta_run.CPU_REWRITES))
    saved = sys.argv
    sys.argv = [run_path] + args
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            runpy.run_path(run_path, run_name="__main__")
    except SystemExit:
        pass
    finally:
        sys.argv = saved


def _forget_case_modules(before: set, folders) -> None:
    """Drop the modules a case imported from its own folder or temporary copies (torch's lazily
    imported submodules stay: dropping those would break torch)."""
    roots = [os.path.realpath(f) + os.sep for f in folders]
    for name in set(sys.modules) - before:
        mod = sys.modules.get(name)
        fn = getattr(mod, "__file__", None) or ""
        if fn and any(os.path.realpath(fn).startswith(r) for r in roots):
            del sys.modules[name]


def main():
    meta_run_path, out_dir, cases_json = sys.argv[1:4]
    # meta_run.py and this driver are not the user's code (their frames are never culprits)
    os.environ["DEVFLOW_LIBRARY_PATHS"] = os.pathsep.join(
        [os.path.dirname(os.path.abspath(meta_run_path)), os.path.dirname(os.path.abspath(__file__))])
    import warnings

    warnings.filterwarnings("ignore")
    import torch

    from devflow.runtime.cli import main as devflow_run

    import gc

    meta_run = load_meta_run(meta_run_path)
    try:  # boolean-mask indexing on meta: assume every element is selected (as meta_run.py does)
        import torch.fx.experimental._config as fx_config

        fx_config.meta_nonzero_assume_all_nonzero = True
    except Exception:  # noqa: BLE001
        pass
    originals = (torch.nn.DataParallel, torch.nn.parallel.DataParallel, torch.Tensor.data)
    # fixtures register torch.load location tags (serialization.register_package): global state
    package_registry = list(getattr(torch.serialization, "_package_registry", []))
    with open(cases_json) as f:
        cases = json.load(f)
    home = os.getcwd()
    saved_path = list(sys.path)
    for case in cases:
        # Cases are isolated: several have a module named `buggy` that their fixture imports, so
        # every module a case loaded from its own folders is forgotten before the next one.
        modules_before = set(sys.modules)
        main_before = sys.modules.get("__main__")
        workdir = tempfile.mkdtemp(prefix="devflow_case_")
        os.chdir(workdir)
        result = {"id": case["id"]}
        try:
            for step in case.get("setup") or []:
                run_setup(meta_run, case["dir"], workdir, step)
            script = os.path.join(case["dir"], "buggy.py")
            mode = case["mode"]
            if mode == "native":
                run_path = script
            else:
                src_dir = tempfile.mkdtemp(prefix="devflow_src_")
                run_path = os.path.join(src_dir, "buggy.py")
                with open(script) as f:
                    src = f.read()
                with open(run_path, "w") as f:
                    f.write(meta_run.rewrite(src))
            report_path = os.path.join(workdir, "report.json")
            argv = ["--report-json", report_path, run_path] + (case.get("args") or [])
            err = io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                if mode == "native":
                    rc = devflow_run(argv)
                else:
                    meta_run.install_dataparallel_shim(torch)
                    meta_run.install_data_setter(torch)
                    torch.__future__.set_swap_module_params_on_conversion(True)
                    with meta_run.make_check_mode(torch, check_devices=(mode == "strict")):
                        rc = devflow_run(argv)
            result["rc"] = rc
            result["run_path"] = run_path
            result["stderr"] = err.getvalue()[-20000:]
            if os.path.exists(report_path):
                with open(report_path) as f:
                    result["report"] = json.load(f)
        except BaseException as e:  # noqa: BLE001 - one broken case must not hide the others
            import traceback

            result["driver_error"] = f"{type(e).__name__}: {e}"
            result["driver_traceback"] = traceback.format_exc()[-3000:]
        finally:
            torch.nn.DataParallel, torch.nn.parallel.DataParallel, torch.Tensor.data = originals
            if hasattr(torch.serialization, "_package_registry"):
                torch.serialization._package_registry[:] = package_registry
            torch.set_default_device(None)
            torch.__future__.set_swap_module_params_on_conversion(False)
            sys.path[:] = saved_path
            os.chdir(home)
            _forget_case_modules(modules_before, (case["dir"], workdir, tempfile.gettempdir()))
            if main_before is not None:
                sys.modules["__main__"] = main_before
            gc.collect()  # the next case's gc scan must not see this case's objects
        with open(os.path.join(out_dir, case["id"] + ".json"), "w") as f:
            json.dump(result, f, default=str)


if __name__ == "__main__":
    main()
