"""Static facts about torch and the libraries around it, as the engine reads them.

The facts are data generated from the real packages by `make knowledge`
(tools/knowledge/generate.py -> devflow/knowledge/torch.json, libraries.json; the pinned versions
are in each file's `_header`). This module only loads them and names the tables; the engine never
imports torch.
"""

from __future__ import annotations

import json
from importlib import resources


def _load(name: str) -> dict:
    return json.loads(resources.files("devflow.knowledge").joinpath(name).read_text(encoding="utf-8"))


_TORCH = _load("torch.json")
_LIBS = _load("libraries.json")
VERSIONS = {**_TORCH["_header"]["versions"], **_LIBS["_header"]["versions"]}

# torch's own device constructors (torch.utils._device): they honour device= and the default device.
FACTORIES = frozenset(_TORCH["factories"])
# Factories that, given one Python number, build a 0-dim tensor (which mixes freely with any device).
MAYBE_SCALAR_FACTORIES = frozenset(_TORCH["maybe_scalar_factories"])
# torch.* functions with a device= parameter (factories, *_like, normal, from_file, ...).
ACCEPTS_DEVICE = frozenset(_TORCH["accepts_device"])
# *_like: same device as the argument unless device= is given.
LIKE_FACTORIES = frozenset(_TORCH["like_factories"])
# Legacy typed constructors: always cpu (torch.cuda.* ones are cuda).
LEGACY_CPU_TYPES = frozenset(_TORCH["legacy_cpu_types"])
# Functions that build a cpu tensor whatever the default device (probed under a meta default).
CPU_ONLY_FUNCS = frozenset(_TORCH["cpu_result_functions"])
# Loaders that restore tensors onto the device they were saved from unless map_location is given.
MAP_LOCATION_LOADERS = _TORCH["map_location_loaders"]
# torch.* functions combining a list of tensors into one tensor: the tensors must share a device.
SEQUENCE_OPS = frozenset(_TORCH["sequence_ops"])
# torch.* names that are not ops on tensors (classes, submodules, non-tensor results): never checked.
MIXING_OK = frozenset(_TORCH["non_tensor_functions"])
# Return a Python bool, yet compare two tensors element-wise (`torch.equal`, `Tensor.allclose`): one device.
SAME_DEVICE_PREDICATES = frozenset(_TORCH["same_device_predicates"])
# Tensor methods that do not return a tensor on the receiver's device.
NON_TENSOR_METHODS = frozenset(_TORCH["non_tensor_methods"])
# Tensor methods whose result is on another device (they take device=, or are .cpu() / .type()).
DEVICE_MOVING_METHODS = frozenset(_TORCH["device_moving_methods"])
# Tensor methods returning a tensor on the receiver's device.
SAME_DEVICE_METHODS = frozenset(_TORCH["same_device_methods"])
# In-place Tensor methods that take no other tensor (the receiver keeps its device).
IN_PLACE_FILL = frozenset(_TORCH["in_place_fill_methods"])
# Tensor methods whose tensor argument gives only its shape (`a.expand_as(b)`): no device check.
SHAPE_ARGUMENT_METHODS = frozenset(_TORCH.get("shape_argument_methods", ()))
# torch.* functions on several tensors returning one per input, each on its input's device (broadcast_tensors).
PER_INPUT_FUNCTIONS = frozenset(_TORCH.get("per_input_functions", ()))

# torch.nn module classes: which have parameters or buffers (built on the meta device), which have
# none, and containers (empty, they own what they are given).
MODULES_WITH_STATE = {k: v for k, v in _TORCH["modules_with_state"].items()}
CONTAINER_MODULES = frozenset(_TORCH["container_modules"])
# Creating one of these in forward() is harmless: no parameters or buffers (containers when empty).
PARAM_FREE_MODULES = frozenset(_TORCH["param_free_modules"]) | CONTAINER_MODULES
# Losses whose constructor takes a weight tensor that becomes a buffer, and those keywords.
WEIGHTED_LOSSES = frozenset(_TORCH["weighted_losses"])
LOSS_WEIGHT_KWARGS = frozenset(_TORCH["loss_weight_kwargs"])
# torch.optim classes; per class, where each state entry lives after a step ("param": the
# parameter's device, "cpu": a 0-dim cpu tensor) by default and with capturable=True.
OPTIMIZER_STATE = _TORCH["optimizers"]
OPTIMIZERS = frozenset(OPTIMIZER_STATE)
# torch.optim.lr_scheduler classes (their state_dict holds numbers, no tensors), and the libraries'
# functions that return one (transformers' get_linear_schedule_with_warmup -> LambdaLR), as
# "package.function" (the package's top-level name and the function's name).
LR_SCHEDULERS = frozenset(_TORCH["lr_schedulers"])
SCHEDULER_FACTORIES = frozenset(f"{q.split('.', 1)[0]}.{q.rsplit('.', 1)[-1]}" for lib in _LIBS.values()
                                if isinstance(lib, dict) for tables in lib.values() if isinstance(tables, dict)
                                for q in tables.get("scheduler_factories", ()))
# torch.optim classes whose __init__ creates per-parameter state tensors (on the parameters' device
# at construction time) instead of lazily in the first step(); from torch 2.13's sources, by the same
# summary the engine computes for a project's optimizers (tests/python/engine/test_optimizer_state.py
# re-derives it from the installed torch).
EAGER_STATE_OPTIMIZERS = frozenset({"Adagrad"})
# Module wrappers taking `module` and `device_ids`.
DATA_PARALLEL = frozenset(_TORCH["data_parallel"])
# Every torch.nn class that is an nn.Module (the tables above cover them all), as opposed to torch.nn's
# tensor subclasses (Parameter, Buffer, ...) and option records: only these construct a module.
NN_MODULES = frozenset(MODULES_WITH_STATE) | PARAM_FREE_MODULES | frozenset(_TORCH["modules_not_built"]) | \
    DATA_PARALLEL | {"Module"}
# torch.nn's tensor subclasses: the data they wrap, owned by the module they are assigned to.
NN_TENSOR_WRAPPERS = frozenset({"Parameter", "Buffer"})
# torch.nn classmethods that build an instance of their class from the tensors they are given
# (`nn.Embedding.from_pretrained(weights)`): class name -> method names.
MODULE_CONSTRUCTORS = {k: frozenset(v) for k, v in _TORCH.get("module_constructors", {}).items()}


def _newest(lib: str) -> dict:
    per = _LIBS.get(lib, {})
    return per[_LIBS["_header"]["versions"][lib][0]] if per else {}


# Third-party, newest pinned version: method name -> {"placement": "default"|"keeps"|"mixed", ...}
# for methods that build new submodules on self after construction ("default": on the cpu).
SUBMODULE_BUILDERS = {lib: _newest(lib).get("submodule_builders", {}) for lib in _LIBS if not lib.startswith("_")}
# Loaders whose device / map_location defaults to the cpu (e.g. safetensors.torch.load_file).
CPU_DEFAULT_LOADERS = {q: v for lib in SUBMODULE_BUILDERS for q, v in _newest(lib).get("cpu_default_loaders", {}).items()}
# Functions / methods that dispatch a model with device_map (accelerate, transformers, diffusers, peft).
DEVICE_MAP_LOADERS = frozenset(q for lib in SUBMODULE_BUILDERS for q in _newest(lib).get("device_map_loaders", []))
DEVICE_MAP_METHODS = frozenset(q.rsplit(".", 1)[-1] for q in DEVICE_MAP_LOADERS)

# Library classmethods that return an instance of the class they are called on (`from_pretrained` of
# transformers' PreTrainedModel, huggingface_hub's PyTorchModelHubMixin, diffusers' ModelMixin), restricted
# to torch modules and mixins that place what they build: method -> {(package, class name)}.
INSTANCE_CONSTRUCTORS: dict[str, frozenset] = {}
for _lib in SUBMODULE_BUILDERS:
    for _m, _e in _newest(_lib).get("instance_constructors", {}).items():
        INSTANCE_CONSTRUCTORS[_m] = INSTANCE_CONSTRUCTORS.get(_m, frozenset()) | {(_lib, c) for c in _e["classes"]}
# Library model classes: those whose `from_pretrained` builds an instance of them and that are torch modules
# (transformers' PreTrainedModel subclasses, diffusers' models ...), by (package, class name). Constructed
# directly (`BertForMaskedLM(config)`) such a class builds its weights where the default device is, and its
# forward returns an output record (a ModelOutput) whose fields are tensors on the model's device.
LIBRARY_MODEL_CLASSES = INSTANCE_CONSTRUCTORS.get("from_pretrained", frozenset())
# Library functions creating a tensor on their `device` parameter (default: None, the default device, or
# "cpu"), taking no tensor: (package, function name) -> {"position": index or None, "default": None | "cpu"}.
DEVICE_FACTORIES = {(q.split(".", 1)[0], q.rsplit(".", 1)[-1]): e for lib in SUBMODULE_BUILDERS
                    for q, e in _newest(lib).get("device_factories", {}).items()}
# Keywords with which such a constructor (or a loader) puts its result somewhere of the caller's choosing.
PLACING_KWARGS = frozenset({"device", "device_map", "map_location"})


def library_versions(lib: str) -> dict:
    """Every pinned version's tables of a third-party library (e.g. timm's head builders per version)."""
    return dict(_LIBS.get(lib, {}))
