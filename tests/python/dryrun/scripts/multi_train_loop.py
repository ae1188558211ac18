# Three independent mixes in one training loop: a loss weight on cpu, a cpu mask, a cpu bias term.
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
class_weight = torch.tensor([1.0, 2.0, 0.5])
for step in range(4):
    x = torch.randn(32, 8).to(device)
    y = torch.randint(0, 3, (32,)).to(device)
    logits = model(x)
    loss = F.cross_entropy(logits, y, weight=class_weight)
    keep = torch.rand(32, 3) > 0.1
    reg = (logits * keep).pow(2).mean()
    offset = torch.ones(3)
    total = loss + 0.01 * reg + (logits + offset).mean() * 0
    opt.zero_grad()
    total.backward()
    opt.step()
print("done")
