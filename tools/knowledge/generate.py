#!/usr/bin/env python3
"""Generate devflow's library knowledge (server/devflow/knowledge/*.json) from the real packages.

    make knowledge            # = .venv/bin/python tools/knowledge/generate.py
    python tools/knowledge/generate.py [--check]   # --check: fail if the committed files differ

torch.json: from the installed torch (must be the pinned version): its device-constructor list,
its type stubs, and objects built / optimizers stepped on the meta device.
libraries.json: from released wheels of libraries that cannot be installed next to torch here,
downloaded with `pip download --no-deps` into .cache/knowledge and read by an ast scan.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from knowledge import overrides, pins  # noqa: E402

OUT = ROOT / "server" / "devflow" / "knowledge"
CACHE = ROOT / ".cache" / "knowledge"


def _header(what: str, versions: dict) -> dict:
    return {"generated_by": "tools/knowledge/generate.py (make knowledge)", "what": what, "versions": versions,
            "python": platform.python_version(), "do_not_edit": "regenerate instead"}


def torch_knowledge() -> dict:
    import torch

    from knowledge import torch_tables

    version = torch.__version__.split("+")[0]
    if version != pins.TORCH:
        sys.exit(f"torch {torch.__version__} is installed; the knowledge is pinned to torch=={pins.TORCH}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tables = torch_tables.generate()
    applied = {}
    for table, extra in (("device_moving_methods", overrides.DEVICE_MOVING_METHODS),
                         ("non_tensor_methods", overrides.NON_TENSOR_METHODS),
                         ("non_tensor_functions", overrides.MIXING_OK),
                         ("sequence_ops", overrides.SEQUENCE_OPS)):
        added = {k: v for k, v in extra.items() if k not in tables[table]}
        for k in added:
            for other in ("same_device_methods", "non_tensor_methods", "device_moving_methods"):
                if other != table and other in tables and k in tables[other]:
                    tables[other].remove(k)
        tables[table] = sorted(set(tables[table]) | set(added))
        if added:
            applied[table] = added
    tables["same_device_predicates"] = sorted(overrides.SAME_DEVICE_PREDICATES)
    applied["same_device_predicates"] = dict(overrides.SAME_DEVICE_PREDICATES)
    tables["overrides"] = applied
    return {"_header": _header("torch API facts", {"torch": torch.__version__}), **tables}


def _wheel(name: str, version: str) -> Path:
    CACHE.mkdir(parents=True, exist_ok=True)
    norm = name.replace("-", "_")

    def present():  # the wheel, else the sdist of a project that publishes none
        return sorted(CACHE.glob(f"{norm}-{version}-*.whl")) or sorted(CACHE.glob(f"{norm}-{version}.tar.gz")) or \
            sorted(CACHE.glob(f"{name}-{version}.tar.gz"))

    found = present()
    if not found:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(CACHE),
                        *pins.WHEEL_FOR.get((name, version), []), f"{name}=={version}"], check=True)
        found = present()
    if not found:
        sys.exit(f"no wheel for {name}=={version} in {CACHE}")
    return found[0]


def library_knowledge(stateful: set[str], schedulers: set[str] = frozenset()) -> dict:
    from knowledge import library_scan

    libs, versions = {}, {}
    for name, vs in pins.LIBRARIES.items():
        for v in vs:
            libs.setdefault(name, {})[v] = library_scan.scan(_wheel(name, v), stateful, schedulers)
            versions.setdefault(name, []).append(v)
    return {"_header": _header("third-party library facts (ast scan of released wheels)", versions), **libs}


def framework_knowledge(torch_stateful: set[str]) -> dict:
    """frameworks.json: torch.distributions / generators / rnn lengths / jit.trace from the installed
    torch; Lightning's batch-transfer hooks and generate()'s callbacks from their released wheels."""
    import torch

    from knowledge import factories, frameworks, metrics, tensor_libraries

    hf = pins.LIBRARIES["transformers"][0]
    acc = pins.LIBRARIES["accelerate"][0]
    versions = {"torch": torch.__version__, **{k: [v] for k, v in pins.FRAMEWORKS.items()}, "transformers": [hf],
                "accelerate": [acc],
                **{k: [v] for k, v in pins.TENSOR_LIBRARIES.items()}, **pins.BATCH_ITERATORS,
                **{k: [v] for k, v in pins.DATASET_LOADERS.items()},
                **{k: [v] for k, (_m, v) in pins.HOST_PACKAGES.items()},
                **{k: [v] for k, (_m, v) in pins.CONFIG_LIBRARIES.items()},
                **{k: [v] for k, (_m, v) in pins.STATEFUL_MODULE_LIBRARIES.items()},
                **{k: [v] for k, (_m, v) in pins.FACTORY_LIBRARIES.items()},
                **{k: [v] for k, v in pins.ITERABLE_WRAPPERS.items()}, **pins.METRIC_LIBRARIES,
                **{k: [v] for k, (_m, v) in pins.LIGHTNING_LOOPS.items()}}
    versions.update({k: vs[:1] for k, vs in pins.LIBRARIES.items() if k not in versions})  # optimizer_restorers
    tl = pins.TENSOR_LIBRARIES
    nn_methods = {n for n in dir(torch.nn.Module) if not n.startswith("_")}
    torch_tables = frameworks.torch_tables()
    collectives = set(torch_tables["distributed"]["collectives"])
    return {"_header": _header("framework facts (torch probed; lightning, pytorch_lightning, transformers, accelerate, tiktoken, torch_geometric, "
                               "torchvision, torchaudio, lpips, open_clip, segment_anything, encodec, whisper, clip, dgl, torchmetrics, pillow, scikit-image, opencv, imageio, soundfile, librosa, yacs, easydict, addict, tqdm, timm, peft, diffusers, huggingface_hub, kornia, safetensors ast scan; "
                               "einops probed on meta from its wheel)", versions),
            **torch_tables,
            "lightning": {**frameworks.lightning(_wheel("lightning", pins.FRAMEWORKS["lightning"])),
                          "loop_hooks": {**{f"lightning {pins.FRAMEWORKS['lightning']}": frameworks.loop_hooks(
                              _wheel("lightning", pins.FRAMEWORKS["lightning"]), "lightning/pytorch")},
                                         **{f"{d} {v}": frameworks.loop_hooks(_wheel(d, v), m)
                                            for d, (m, v) in pins.LIGHTNING_LOOPS.items()}}},
            "generation_callbacks": frameworks.generation_callbacks(_wheel("transformers", hf)),
            "accelerate": frameworks.accelerate(_wheel("accelerate", acc)),
            "hf_trainer": frameworks.trainer_hooks(_wheel("transformers", hf)),
            "library_modules": {lib: frameworks.module_classes(_wheel(lib, pins.LIBRARIES[lib][0]), lib)
                                for lib in pins.MODEL_LIBRARIES},
            "library_module_children": {lib: frameworks.module_children(_wheel(lib, pins.LIBRARIES[lib][0]), lib)
                                        for lib in pins.MODEL_LIBRARIES},
            "stateful_library_modules": {m: frameworks.stateful_modules(_wheel(d, v), m, torch_stateful)
                                         for d, (m, v) in pins.STATEFUL_MODULE_LIBRARIES.items()},
            "library_factories": {m: factories.library_factories(_wheel(d, v), m, torch_stateful)
                                  for d, (m, v) in pins.FACTORY_LIBRARIES.items()},
            "module_input_methods": {**{lib: frameworks.module_input_methods(_wheel(lib, pins.LIBRARIES[lib][0]), lib, nn_methods)
                                        for lib in pins.INPUT_METHOD_LIBRARIES},
                                     **{m: frameworks.module_input_methods(_wheel(d, v), m, nn_methods)
                                        for d, (m, v) in pins.FACTORY_LIBRARIES.items()}},
            "called_submodules": {**{lib: frameworks.called_submodules(_wheel(lib, pins.LIBRARIES[lib][0]), lib, nn_methods)
                                     for lib in pins.INPUT_METHOD_LIBRARIES},
                                  **{m: frameworks.called_submodules(_wheel(d, v), m, nn_methods)
                                     for d, (m, v) in pins.FACTORY_LIBRARIES.items()}},
            "generation_cpu_state": frameworks.generation_cpu_state(_wheel("transformers", hf)),
            "processor_modalities": frameworks.processor_modalities(_wheel("transformers", hf)),
            "shape_libraries": {"einops": tensor_libraries.einops(_wheel("einops", tl["einops"]))},
            "tokenizers": {"tiktoken": tensor_libraries.tiktoken(_wheel("tiktoken", tl["tiktoken"]))},
            "tokenizer_int_methods": {"transformers": tensor_libraries.hf_tokenizer_int_methods(_wheel("transformers", hf))},
            "batch_iterators": {f"{lib} {v}": tensor_libraries.device_iterators(_wheel(lib, v))
                                for lib, vs in pins.BATCH_ITERATORS.items() for v in vs},
            "dataset_loaders": {lib: frameworks.dataset_loaders(_wheel(lib, v), lib) for lib, v in pins.DATASET_LOADERS.items()},
            "graph_datasets": {lib: frameworks.graph_datasets(_wheel(lib, v), lib) for lib, v in pins.DATASET_LOADERS.items()},
            "image_transforms": {"torchvision": frameworks.image_transforms(_wheel("torchvision", pins.LIBRARIES["torchvision"][0]))},
            "host_packages": sorted(m for d, (m, v) in pins.HOST_PACKAGES.items() if frameworks.host_package(_wheel(d, v), m)),
            "attribute_dicts": {d: frameworks.attribute_dicts(_wheel(d, v), m) for d, (m, v) in pins.CONFIG_LIBRARIES.items()},
            "iterable_wrappers": {lib: frameworks.iterable_wrappers(_wheel(lib, v), lib) for lib, v in pins.ITERABLE_WRAPPERS.items()},
            "metrics": {f"{lib} {v}": metrics.metrics(_wheel(lib, v), lib, collectives)
                        for lib, vs in pins.METRIC_LIBRARIES.items() for v in vs},
            "optimizer_restorers": {lib: frameworks.optimizer_restorers(_wheel(lib, vs[0]), lib)
                                    for lib, vs in pins.LIBRARIES.items()}}


def _dump(data: dict) -> str:
    return json.dumps(data, indent=1, sort_keys=False) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="compare with the committed files instead of writing")
    args = ap.parse_args(argv)
    t = torch_knowledge()
    lib = library_knowledge(set(t["modules_with_state"]), set(t["lr_schedulers"]))
    outputs = {OUT / "torch.json": _dump(t), OUT / "libraries.json": _dump(lib), OUT / "frameworks.json": _dump(framework_knowledge(set(t["modules_with_state"])))}
    stale = []
    for path, text in outputs.items():
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(path)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    for k, v in t.items():
        if not k.startswith("_"):
            print(f"  torch.{k}: {len(v)}")
    for name, per in lib.items():
        if not name.startswith("_"):
            for v, tables in per.items():
                print(f"  {name} {v}: " + ", ".join(f"{k} {len(x)}" for k, x in tables.items()))
    if stale:
        print("stale (run `make knowledge`):", *map(str, stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
