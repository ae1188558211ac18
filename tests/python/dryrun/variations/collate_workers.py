# A mix inside a DataLoader collate_fn that runs in 2 worker processes: the normalisation
# statistics live on the GPU (moved there with the model), the batch is still on the cpu. Once the
# mix is fixed by moving the batch to the GPU, the forked worker fails to use CUDA (DEV909): the
# statistics belong on the cpu here.
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

device = "cuda" if torch.cuda.is_available() else "cpu"
stats = {"mean": torch.zeros(6).to(device), "std": torch.ones(6).to(device)}


class Rows(Dataset):
    def __len__(self):
        return 32

    def __getitem__(self, i):
        return torch.randn(6), i % 3


def collate(batch):
    x = torch.stack([b[0] for b in batch])
    y = torch.tensor([b[1] for b in batch])
    return (x - stats["mean"]) / stats["std"], y  # dryrun-expect: DEV901  # dryrun-expect: DEV909


if __name__ == "__main__":
    model = nn.Linear(6, 3).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(Rows(), batch_size=8, num_workers=2, collate_fn=collate)
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x.to(device)), y.to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
    print("done")
