"""The index a DataLoader hands its dataset's `__getitem__`."""
from devflow.analysis.values import UNKNOWN, Val

# Keyword arguments that replace the DataLoader's default index source.
_INDEX_SOURCES = ("sampler", "batch_sampler")


def loader_index(kwargs) -> Val:
    """Without a sampler or batch_sampler of the caller's, the DataLoader draws its indices from its own
    SequentialSampler / RandomSampler, which yield Python ints: `dataset[i]` gets an int, so
    `torch.tensor(idx)` in `__getitem__` is a cpu tensor. A caller's sampler may yield anything."""
    if any(k in kwargs for k in _INDEX_SOURCES) or "__opaque__" in kwargs:
        return UNKNOWN
    return Val("number")
