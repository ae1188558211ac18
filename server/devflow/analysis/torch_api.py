"""Static facts about the torch API (the engine never imports torch).

FACTORIES is copied from torch 2.13's own list of device-constructor functions
(`torch/utils/_device.py::_device_constructors`): the functions that honour `device=` and the
default device.
"""

from __future__ import annotations

FACTORIES = frozenset({
    "empty", "empty_permuted", "empty_strided", "empty_quantized", "ones", "arange", "bartlett_window",
    "blackman_window", "eye", "fft.fftfreq", "fft.rfftfreq", "full", "hamming_window", "hann_window",
    "kaiser_window", "linspace", "logspace", "nested.nested_tensor", "rand", "randn", "randint", "randperm",
    "range", "sparse_coo_tensor", "sparse_compressed_tensor", "sparse_csr_tensor", "sparse_csc_tensor",
    "sparse_bsr_tensor", "sparse_bsc_tensor", "tril_indices", "triu_indices", "zeros", "asarray",
    "tensor", "as_tensor", "scalar_tensor",
})
# Factories whose result may be 0-dim (and so mixes freely with any device).
MAYBE_SCALAR_FACTORIES = frozenset({"tensor", "as_tensor", "asarray", "scalar_tensor"})
# *_like: same device as the argument unless device= is given.
LIKE_FACTORIES = frozenset({"zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like", "randint_like"})
# Legacy typed constructors: always cpu (torch.cuda.* ones are cuda).
LEGACY_CPU_TYPES = frozenset({
    "Tensor", "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor", "CharTensor",
    "ShortTensor", "IntTensor", "LongTensor", "BoolTensor",
})
CPU_ONLY_FUNCS = frozenset({"from_numpy", "frombuffer"})
# torch.* functions whose tensor arguments must share a device; the result is on that device.
# Any other torch.* call on tensors also keeps the device; these are the ones we check.
SEQUENCE_OPS = frozenset({"cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack", "column_stack",
                           "block_diag", "cartesian_prod", "meshgrid", "broadcast_tensors", "einsum"})
# Functions that accept tensors on different devices (or move them) and must never be checked.
MIXING_OK = frozenset({"save", "load", "is_tensor", "numel", "manual_seed", "set_grad_enabled", "no_grad",
                       "device", "dtype", "equal", "allclose", "isclose", "testing", "utils", "cuda", "jit",
                       "compile", "distributed", "autograd", "set_default_device", "set_default_tensor_type",
                       "get_default_device", "empty_cache", "Generator", "Size", "finfo", "iinfo", "is_grad_enabled",
                       "pack_padded_sequence"})
# Tensor methods that do not return a tensor on the receiver's device.
NON_TENSOR_METHODS = frozenset({"item", "tolist", "numpy", "size", "dim", "numel", "nelement", "stride",
                                "data_ptr", "element_size", "is_contiguous", "get_device", "__len__",
                                "type_as", "storage", "untyped_storage", "nonzero_static", "backward", "register_hook"})
# Tensor methods returning a tensor on the receiver's device (a broad, safe default for the rest too).
IN_PLACE_FILL = frozenset({"normal_", "uniform_", "fill_", "zero_", "random_", "bernoulli_", "exponential_",
                           "geometric_", "log_normal_", "cauchy_", "clamp_", "copy_"})

# torch.nn modules without parameters or buffers: creating one in forward() is harmless.
PARAM_FREE_MODULES = frozenset({
    "ReLU", "ReLU6", "LeakyReLU", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish", "Sigmoid", "Tanh", "Softmax",
    "LogSoftmax", "Softmin", "Softplus", "Softsign", "Hardtanh", "Hardswish", "Hardsigmoid", "Tanhshrink",
    "Softshrink", "Hardshrink", "Threshold", "LogSigmoid", "GLU", "Identity", "Flatten", "Unflatten", "Dropout",
    "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout", "MaxPool1d", "MaxPool2d",
    "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
    "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "LPPool1d", "LPPool2d",
    "FractionalMaxPool2d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "Upsample", "UpsamplingNearest2d",
    "UpsamplingBilinear2d", "PixelShuffle", "PixelUnshuffle", "ChannelShuffle", "ZeroPad1d", "ZeroPad2d",
    "ZeroPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d",
    "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d",
    "CircularPad2d", "CircularPad3d", "Fold", "Unfold", "CosineSimilarity", "PairwiseDistance", "MSELoss",
    "L1Loss", "SmoothL1Loss", "HuberLoss", "BCEWithLogitsLoss", "CrossEntropyLoss", "NLLLoss", "BCELoss",
    "KLDivLoss", "CTCLoss", "MarginRankingLoss", "HingeEmbeddingLoss", "CosineEmbeddingLoss", "TripletMarginLoss",
    "SoftMarginLoss", "MultiLabelSoftMarginLoss", "MultiLabelMarginLoss", "MultiMarginLoss", "PoissonNLLLoss",
    "GaussianNLLLoss", "Sequential", "ModuleList", "ModuleDict",
})
# Losses whose constructor takes a weight tensor that becomes a buffer.
WEIGHTED_LOSSES = frozenset({"CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss", "MultiLabelSoftMarginLoss",
                             "MultiMarginLoss", "NLLLoss2d"})
LOSS_WEIGHT_KWARGS = frozenset({"weight", "pos_weight"})
OPTIMIZERS = frozenset({"SGD", "Adam", "AdamW", "Adagrad", "Adadelta", "Adamax", "ASGD", "LBFGS", "NAdam", "RAdam",
                        "RMSprop", "Rprop", "SparseAdam", "Adafactor", "Muon"})
# torch.optim classes whose __init__ creates per-parameter state tensors (on the parameters' device
# at construction time) instead of lazily in the first step(); from torch 2.13's sources, by the same
# summary the engine computes for a project's optimizers (tests/python/engine/test_optimizer_state.py
# re-derives it from the installed torch).
EAGER_STATE_OPTIMIZERS = frozenset({"Adagrad"})
DATA_PARALLEL = frozenset({"DataParallel", "DistributedDataParallel"})
