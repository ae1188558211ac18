# CUDA inside DataLoader workers. Forked workers (the default) cannot use CUDA once the parent has
# (the model went to the GPU first): a .cuda() in __getitem__ and an op on a cuda tensor the dataset
# holds both fail there. The same dataset in spawned workers works, and a mix inside a spawned
# worker is found there as in the main process; their cuda batches cannot be pinned.
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class ToGpu(Dataset):
    def __init__(self, offset):
        self.offset = offset

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return torch.randn(3).cuda() + self.offset  # dryrun-expect: DEV909


class Held(Dataset):
    def __init__(self):
        self.rows = torch.randn(8, 3, device="cuda")

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return self.rows[i]  # dryrun-expect: DEV909


class Mixed(Dataset):
    def __init__(self):
        self.scale = torch.full((3,), 2.0)

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return torch.randn(3, device="cuda") * self.scale  # dryrun-expect: DEV901


if __name__ == "__main__":
    model = nn.Linear(3, 1).cuda()
    for batch in DataLoader(ToGpu(0.0), batch_size=4, num_workers=2):
        model(batch.cuda())
    for batch in DataLoader(Held(), batch_size=4, num_workers=2):
        model(batch.cuda())
    spawned = dict(batch_size=4, num_workers=2, multiprocessing_context="spawn")
    for batch in DataLoader(ToGpu(1.0), **spawned):
        assert batch.is_cuda
        model(batch)
    for batch in DataLoader(Mixed(), **spawned):
        model(batch)
    # cuda batches from spawned workers, pinned by the loader's pin-memory thread
    for batch in DataLoader(ToGpu(2.0), pin_memory=True, **spawned):  # dryrun-expect: DEV908
        model(batch)
    print("done")
