# Converts a network's BatchNorm layers to a cross-replica variant (the way sync_batchnorm's
# convert_model does): new modules whose running statistics are shared with the old ones, but whose
# num_batches_tracked counter is a fresh buffer on the cpu. A wrapper is rebuilt around the result
# with the same device_ids.
import torch.nn as nn


class CrossReplicaNorm(nn.BatchNorm2d):
    """BatchNorm whose statistics would be reduced over the replicas (omitted here)."""


class ReplicatedWrapper(nn.DataParallel):
    """DataParallel with a replication callback (omitted here)."""


def _norm_like(old):
    new = CrossReplicaNorm(old.num_features, old.eps, old.momentum, old.affine)
    new.running_mean, new.running_var = old.running_mean, old.running_var
    if old.affine:
        new.weight.data = old.weight.data.clone().detach()
        new.bias.data = old.bias.data.clone().detach()
    return new


def _rewrap(wrapper, inner):
    return ReplicatedWrapper(inner, device_ids=wrapper.device_ids)


def to_cross_replica(module):
    if isinstance(module, nn.DataParallel):
        return _rewrap(module, to_cross_replica(module.module))
    out = _norm_like(module) if isinstance(module, nn.BatchNorm2d) else module
    for name, child in module.named_children():
        out.add_module(name, to_cross_replica(child))
    return out
