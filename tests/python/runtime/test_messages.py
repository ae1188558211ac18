"""The message parser on every line of ../shared/corpus/error_messages.txt (and the variants its
context column quotes): each is recognised, with devices / argument / op where the text has them."""

import pytest

from devflow.runtime.messages import is_device_error, normalize_device, parse_message

SUBST = {"<dev2>": "cpu", "<dev>": "cuda:0", "<arg>": "mat2", "<op>": "wrapper_CUDA_mm"}


def corpus_lines(shared_dir):
    lines = []
    for raw in (shared_dir / "corpus/error_messages.txt").read_text(encoding="utf-8").splitlines():
        if not raw.strip() or raw.startswith("#"):
            continue
        msg = raw.split("\t")[0]
        for k, v in SUBST.items():
            msg = msg.replace(k, v)
        lines.append((raw.split("\t")[0], msg))
    return lines


def test_every_line_is_recognised(shared_dir):
    lines = corpus_lines(shared_dir)
    assert len(lines) >= 45
    misses = [m for _, m in lines if parse_message(m) is None]
    assert misses == []


def test_placeholders_are_parsed(shared_dir):
    for template, msg in corpus_lines(shared_dir):
        p = parse_message(msg)
        if "<dev>" in template:
            assert "cuda:0" in p["devices"], msg
        if "<dev2>" in template:
            assert "cpu" in p["devices"], msg
        if "<arg>" in template:
            assert p["argument"] == "mat2", msg
        if "<op>" in template:
            assert p["op"] == "wrapper_CUDA_mm", msg
        assert p["exc_type"] == template.split(":")[0], msg


@pytest.mark.parametrize("text,family,devices,arg,op", [
    ("RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and CPU!",
     "same-device", ["cuda:0", "cpu"], None, None),
    ("RuntimeError: Expected all tensors to be on the same device, but found at least two devicesm cpu and cuda:0!",
     "same-device", ["cpu", "cuda:0"], None, None),
    ("Expected all tensors to be on the same device, but found at least two devices, cuda:1 and cuda:7! "
     "(when checking argument for argument index in method wrapper__index_select)",
     "same-device", ["cuda:1", "cuda:7"], "index", "wrapper__index_select"),
    ("Expected all tensors to be on the same device, but got weight is on cpu, different from other tensors on "
     "cuda:0 (when checking argument in method wrapper_CUDA_nll_loss_forward)",
     "same-device-named", ["cpu", "cuda:0"], "weight", "wrapper_CUDA_nll_loss_forward"),
    ("Tensor for argument #2 'weight' is on CPU, but expected it to be on GPU (while checking arguments for cudnn_convolution)",
     "checkargs-device", ["cpu", "cuda"], "weight", "cudnn_convolution"),
    ("module must have its parameters and buffers on device cuda:0 (device_ids[0]) but found one of them on device: cuda:2",
     "dataparallel-module-device", ["cuda:2", "cuda:0"], None, None),
    ("module must have its parameters and buffers on device xpu:0 (device_ids[0]) but found one of them on device: cpu",
     "dataparallel-module-device", ["cpu", "xpu:0"], None, None),
    ("DistributedDataParallel device_ids and output_device arguments only work with single-device/multiple-device GPU "
     "modules or CPU modules, but got device_ids [0], output_device 0, and module parameters "
     "{device(type='cuda', index=0), device(type='cuda', index=1)}.",
     "ddp-device-ids", ["cuda:0", "cuda:1"], None, None),
    ("Expected all tensors to be on the same device, but found at least two devices, meta and cpu! "
     "[meta-check: aten.addmm.default]", "same-device", ["meta", "cpu"], None, "aten.addmm.default"),
    ("Function ConvolutionBackward0 returned an invalid gradient at index 1 - expected device cpu but got meta",
     "invalid-gradient-device", ["meta", "cpu"], "1", "ConvolutionBackward0"),
])
def test_variants(text, family, devices, arg, op):
    p = parse_message(text)
    assert (p["family"], p["devices"], p["argument"], p["op"]) == (family, devices, arg, op)


def test_conv_type_wording_names_devices():
    p = parse_message("RuntimeError: Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same")
    assert p["devices"] == ["cuda", "cpu"] and p["found_device"] == "cpu" and p["argument"] == "weight"


def test_warning_kind_and_hints():
    p = parse_message("UserWarning: You are calling .generate() with the `input_ids` being on a device type different "
                      "than your model's device. `input_ids` is on cpu, whereas the model is on cuda.")
    assert p["kind"] == "warning" and p["found_device"] == "cpu"
    assert "map_location" in parse_message(
        "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False.")["hint"]


@pytest.mark.parametrize("text", [
    "", "RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x8 and 4x2)",
    "TypeError: add received an invalid combination of arguments - got (torch.FloatTensor, str)",
    "CUDA out of memory. Tried to allocate 2.00 GiB", "x" * 100_000,
])
def test_not_device_errors(text):
    assert not is_device_error(text)


def test_normalize_device():
    assert [normalize_device(d) for d in ("CPU", "GPU", "CUDA", "torch.cuda.HalfTensor", "torch.LongTensor", "cuda:3")] == \
        ["cpu", "cuda", "cuda", "cuda", "cpu", "cuda:3"]
