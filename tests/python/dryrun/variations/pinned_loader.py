# pin_memory=True over batches that are on the GPU already: CUDA refuses to pin them, reported at
# the DataLoader that pins (a dataset built on cuda; factories under a cuda default tensor type).
# Pinning cpu batches and copying them with non_blocking=True is the right way and stays silent.
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset, TensorDataset


def on_gpu_loader(n):
    feats = torch.randn(n, 5).cuda()
    labels = torch.randint(0, 2, (n,), device="cuda")
    return DataLoader(TensorDataset(feats, labels), batch_size=8, pin_memory=True)  # dryrun-expect: DEV908


class Synth(Dataset):
    def __len__(self):
        return 16

    def __getitem__(self, i):
        return torch.rand(5), i % 2


def main():
    model = nn.Linear(5, 2).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    good = DataLoader(TensorDataset(torch.randn(16, 5), torch.randint(0, 2, (16,))), batch_size=8, pin_memory=True)
    for x, y in good:
        assert x.is_pinned()
        x, y = x.to("cuda", non_blocking=True), y.cuda(non_blocking=True)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    for x, y in on_gpu_loader(16):
        model(x)
    torch.set_default_tensor_type("torch.cuda.FloatTensor")
    synth = DataLoader(Synth(), batch_size=4, pin_memory=True)  # dryrun-expect: DEV908
    for x, _ in synth:
        model(x)
    torch.set_default_tensor_type("torch.FloatTensor")
    print("done")


if __name__ == "__main__":
    main()
