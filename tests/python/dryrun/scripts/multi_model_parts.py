# Mixes inside a model split across a helper module: a head added after .to(), a plain-attribute
# tensor, a position table built in forward without device=.
import torch
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(6, 6)
        self.scale = torch.full((6,), 0.5)          # plain attribute: not moved by .to()

    def forward(self, x):
        h = self.proj(x) * self.scale
        pos = torch.arange(x.shape[1]).float().unsqueeze(-1)
        return h + pos


def build(device):
    enc = Encoder().to(device)
    enc.head = nn.Linear(6, 2)                       # added after the move
    return enc


device = "cuda"
model = build(device)
x = torch.randn(4, 5, 6, device=device)
out = model.head(model(x))
print(out.shape)
