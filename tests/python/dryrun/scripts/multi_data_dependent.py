# Data-dependent control flow with real values: early stopping on a loss value, a boolean mask,
# .item() in a condition, nonzero(); two mixes on the way (a cpu threshold tensor, a cpu mask).
import torch
import torch.nn as nn

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "cpu"
model = nn.Linear(4, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.5)
x = torch.randn(64, 4, device=device)
y = (x @ torch.tensor([1.0, -2.0, 0.5, 0.0], device=device)).unsqueeze(1)
threshold = torch.tensor([0.05])
best = float("inf")
for epoch in range(200):
    loss = ((model(x) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if loss.item() < best - 1e-6:
        best = loss.item()
    if (loss < threshold).all():
        print("early stop at epoch", epoch)
        break
mask = torch.randn(64) > 0
selected = x[mask.to(device)]
hard = x[mask]
nz = (selected[:, 0] > 0).nonzero().squeeze(1)
print("selected", selected.shape[0], "hard", hard.shape[0], "nz", nz.numel(), "best", round(best, 4))
