"""The generated library knowledge (server/devflow/knowledge/*.json) loads, has the expected
structure and the pinned versions, and says what the real packages do. Regenerate with
`make knowledge`; `make knowledge-check` compares the committed files with a fresh generation."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from devflow.analysis import torch_api as T

ROOT = Path(__file__).resolve().parents[3]
KNOWLEDGE = ROOT / "server" / "devflow" / "knowledge"


def _pins():
    spec = importlib.util.spec_from_file_location("pins", ROOT / "tools" / "knowledge" / "pins.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("name", ["torch.json", "libraries.json", "frameworks.json"])
def test_files_load_with_a_header(name):
    data = json.loads((KNOWLEDGE / name).read_text())
    header = data["_header"]
    assert header["generated_by"].startswith("tools/knowledge/generate.py")
    assert header["versions"]


def test_versions_are_the_pinned_ones():
    pins = _pins()
    assert T.VERSIONS["torch"].split("+")[0] == pins.TORCH
    for lib, versions in pins.LIBRARIES.items():
        assert T.VERSIONS[lib] == versions, lib


def test_public_tables_keep_their_names_and_types():
    for name in ("FACTORIES", "MAYBE_SCALAR_FACTORIES", "LIKE_FACTORIES", "LEGACY_CPU_TYPES", "CPU_ONLY_FUNCS",
                 "SEQUENCE_OPS", "MIXING_OK", "NON_TENSOR_METHODS", "IN_PLACE_FILL", "PARAM_FREE_MODULES",
                 "WEIGHTED_LOSSES", "LOSS_WEIGHT_KWARGS", "OPTIMIZERS", "DATA_PARALLEL", "ACCEPTS_DEVICE",
                 "DEVICE_MOVING_METHODS", "SAME_DEVICE_METHODS", "CONTAINER_MODULES", "DEVICE_MAP_LOADERS"):
        table = getattr(T, name)
        assert isinstance(table, frozenset) and table and all(isinstance(x, str) for x in table), name


def test_torch_facts():
    assert {"zeros", "randn", "arange", "tensor", "fft.fftfreq"} <= T.FACTORIES
    assert T.MAYBE_SCALAR_FACTORIES == {"tensor", "as_tensor", "asarray", "scalar_tensor"}
    assert {"zeros_like", "randint_like"} <= T.LIKE_FACTORIES and "zeros_like" in T.ACCEPTS_DEVICE
    assert {"from_numpy", "frombuffer"} <= T.CPU_ONLY_FUNCS
    assert T.MAP_LOCATION_LOADERS["torch.load"]["map_location_default"] is None
    assert {"cat", "stack", "einsum"} <= T.SEQUENCE_OPS
    assert {"item", "tolist", "size", "type_as"} <= T.NON_TENSOR_METHODS
    assert {"to", "cuda", "cpu", "new_zeros"} <= T.DEVICE_MOVING_METHODS and "add" in T.SAME_DEVICE_METHODS
    assert not (T.NON_TENSOR_METHODS & T.SAME_DEVICE_METHODS)


def test_module_facts():
    assert T.MODULES_WITH_STATE["Linear"] == {"parameters": ["weight", "bias"], "buffers": []}
    assert "running_mean" in T.MODULES_WITH_STATE["BatchNorm2d"]["buffers"]
    assert {"ReLU", "Dropout", "MaxPool2d", "CrossEntropyLoss", "InstanceNorm2d"} <= T.PARAM_FREE_MODULES
    assert not (T.PARAM_FREE_MODULES & set(T.MODULES_WITH_STATE))
    assert {"Sequential", "ModuleList", "ModuleDict"} <= T.CONTAINER_MODULES
    assert {"DataParallel", "DistributedDataParallel"} <= T.DATA_PARALLEL and not (T.DATA_PARALLEL & T.PARAM_FREE_MODULES)
    assert {"CrossEntropyLoss", "BCEWithLogitsLoss"} <= T.WEIGHTED_LOSSES
    assert T.LOSS_WEIGHT_KWARGS == {"weight", "pos_weight"}
    # alternative constructors read from torch's sources: classmethods that call `cls(...)`
    assert T.MODULE_CONSTRUCTORS["Embedding"] == {"from_pretrained"} and "EmbeddingBag" in T.MODULE_CONSTRUCTORS
    assert "SyncBatchNorm" not in T.MODULE_CONSTRUCTORS  # convert_sync_batchnorm converts a given module


def test_optimizer_state_placement():
    adam = T.OPTIMIZER_STATE["Adam"]
    assert adam["flags"]["capturable"] is False
    assert adam["default"] == {"step": "cpu", "exp_avg": "param", "exp_avg_sq": "param"}
    assert adam["capturable"]["step"] == "param"
    assert {"SGD", "AdamW", "RMSprop"} <= T.OPTIMIZERS


def test_library_facts():
    assert T.CPU_DEFAULT_LOADERS["safetensors.torch.load_file"] == {"param": "device", "default": "cpu"}
    assert "from_pretrained" in T.DEVICE_MAP_METHODS and "dispatch_model" in T.DEVICE_MAP_METHODS
    timm = T.library_versions("timm")
    # the newest timm rebuilds heads on the old head's device; 1.0.15 on the cpu defaults
    assert timm["1.0.31"]["submodule_builders"]["reset_classifier"]["placement"] == "keeps"
    assert timm["1.0.15"]["submodule_builders"]["reset_classifier"]["placement"] in ("default", "mixed")


def test_tensor_library_facts_and_pins():
    from devflow.analysis import framework_api as FW

    pins = _pins()
    for lib, version in pins.TENSOR_LIBRARIES.items():
        assert FW.VERSIONS[lib] == [version], lib
    assert FW.VERSIONS["torchtext"] == pins.BATCH_ITERATORS["torchtext"]
    # einops: probed on meta from the wheel; only what returns a tensor directly is a plain result
    assert {q for q, kind in FW.SAME_DEVICE_FUNCTIONS.items() if kind == "Tensor"} == \
        {"einops.rearrange", "einops.repeat", "einops.reduce", "einops.einsum"}
    assert FW.SAME_DEVICE_FUNCTIONS["einops.pack"] == "tuple"
    # tiktoken: Encoding constructors and its methods annotated to return ints
    assert {"tiktoken.get_encoding", "tiktoken.encoding_for_model", "tiktoken.Encoding"} <= FW.TOKENIZER_CONSTRUCTORS
    assert {"encode", "encode_ordinary", "encode_batch"} <= FW.TOKENIZER_INT_METHODS and "decode" not in FW.TOKENIZER_INT_METHODS
    # torchtext: before (torchtext.data) and after (torchtext.legacy.data) the move
    for q in ("torchtext.data.BucketIterator", "torchtext.legacy.data.BucketIterator", "torchtext.legacy.data.Iterator"):
        assert FW.DEVICE_ITERATORS[q]["param"] == "device" and FW.DEVICE_ITERATORS[q]["splits"] == "splits", q
    assert "torchtext.legacy.data.BPTTIterator" not in FW.DEVICE_ITERATORS  # its batches are built otherwise: unknown
    assert {"batch_size", "dataset", "fields"} <= FW.ITERATOR_BATCH_NOT_FIELDS


def test_generation_cpu_state_and_dataset_loaders():
    from devflow.analysis import framework_api as FW

    pins = _pins()
    assert FW.VERSIONS["torch_geometric"] == [pins.DATASET_LOADERS["torch_geometric"]]
    # transformers keeps MinLengthLogitsProcessor's eos ids on its device= (default "cpu") and meets scores with
    # them; SuppressTokens moves its tokens to the scores' device first; ForcedEOS only indexes with them
    assert FW.GENERATION_CPU_STATE["MinLengthLogitsProcessor"] == {"param": "device", "position": 2, "default": "cpu",
                                                                   "attrs": ["eos_token_id"]}
    assert "SuppressTokensLogitsProcessor" not in FW.GENERATION_CPU_STATE
    assert "ForcedEOSTokenLogitsProcessor" not in FW.GENERATION_CPU_STATE
    assert "EtaLogitsWarper" not in FW.GENERATION_CPU_STATE  # a 0-dim epsilon mixes with any device
    assert FW.GENERATION_CALLBACK_LISTS == {"LogitsProcessorList", "StoppingCriteriaList"}
    # torch_geometric: the loaders that collate a dataset like torch's DataLoader, not those over one graph
    assert {"torch_geometric.loader.DataLoader", "torch_geometric.loader.dataloader.DataLoader"} <= FW.DATASET_LOADERS
    assert "torch_geometric.loader.NeighborLoader" not in FW.DATASET_LOADERS


def test_image_transforms_and_host_packages():
    from devflow.analysis import framework_api as FW

    assert {"ToTensor", "PILToTensor", "ToImage"} <= FW.TO_TENSOR_TRANSFORMS and "Normalize" not in FW.TO_TENSOR_TRANSFORMS
    assert "Compose" in FW.TRANSFORM_COMPOSERS
    assert {"PIL", "skimage", "cv2", "imageio", "soundfile", "librosa"} <= FW.HOST_PACKAGES


def test_stateful_library_modules_runner_functions_and_tokenizer_ints():
    from devflow.analysis import framework_api as FW

    pins = _pins()
    for dist, (_package, version) in pins.STATEFUL_MODULE_LIBRARIES.items():
        assert FW.VERSIONS[dist] == [version], dist
    # read through the star re-exports users import them by; classes that place themselves are left out
    assert {"lpips.LPIPS", "torch_geometric.nn.GCNConv", "torch_geometric.nn.conv.gcn_conv.GCNConv",
            "open_clip.CLIP", "torchaudio.transforms.MelSpectrogram"} <= FW.STATEFUL_LIBRARY_MODULES
    assert "torch_geometric.nn.MessagePassing" not in FW.STATEFUL_LIBRARY_MODULES  # no state of its own
    # torch functions that run a module on its example inputs, found by what reaches a tracer
    assert FW.MODULE_RUNNER_FUNCTIONS["torch.onnx.export"]["module"] == 0
    assert FW.MODULE_RUNNER_FUNCTIONS["torch.onnx.export"]["inputs_param"] == "args"
    assert "torch.export.export" in FW.MODULE_RUNNER_FUNCTIONS
    # transformers tokenizers: methods annotated to give Python ints
    assert FW.HF_TOKENIZER_INT_METHODS["convert_tokens_to_ids"] == "int_or_list"
    assert FW.HF_TOKENIZER_INT_METHODS["encode"] == "list" and "decode" not in FW.HF_TOKENIZER_INT_METHODS


def test_library_factories():
    from devflow.analysis import framework_api as FW

    pins = _pins()
    for dist, (_package, version) in pins.FACTORY_LIBRARIES.items():
        assert FW.VERSIONS[dist] == [version], dist
    F = FW.LIBRARY_FACTORIES
    # a tuple of a model on its `device` (default "cpu"), training preprocessing (timm's: unknown) and validation
    # preprocessing (a torchvision Compose with a ToTensor), by the name users import it by
    cmt = F["open_clip.create_model_and_transforms"]
    assert cmt["kind"] == "tuple" and cmt["items"][0] == {"kind": "model", "device": "device", "position": 4, "default": "cpu"}
    assert cmt["items"][1] is None and cmt["items"][2] == {"kind": "image_transform"}
    assert F["open_clip.get_tokenizer"] == {"kind": "tokenizer"} and F["open_clip.tokenize"] == {"kind": "cpu_tensor"}
    # a None device filled in with "cuda" if available; a registry of builders; a static method building the model
    assert F["whisper.load_model"]["default"] == "auto" and F["clip.load"]["items"][0]["default"] == "auto"
    assert F["segment_anything.sam_model_registry[]"] == {"kind": "model"}
    assert F["encodec.EncodecModel.encodec_model_24khz"] == {"kind": "model"}
    assert "open_clip.create_loss" not in F  # a loss holds no parameters: not a model to place
    assert {"encode_image", "encode_text"} <= FW.MODULE_INPUT_METHODS["open_clip"]
