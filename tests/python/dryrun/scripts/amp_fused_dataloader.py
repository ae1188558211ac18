# AMP + GradScaler + fused AdamW + DataLoader with workers + torch.compile, all on the virtual GPU;
# one mix: a cpu label-smoothing table.
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

ds = TensorDataset(torch.randn(64, 10), torch.randint(0, 4, (64,)))
loader = DataLoader(ds, batch_size=16, shuffle=True, num_workers=2)
model = torch.compile(nn.Sequential(nn.Linear(10, 32), nn.GELU(), nn.Linear(32, 4)).cuda())
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
scaler = torch.amp.GradScaler("cuda")
prior = torch.full((4,), 0.25)
for xb, yb in loader:
    xb, yb = xb.cuda(non_blocking=True), yb.cuda(non_blocking=True)
    with torch.autocast("cuda"):
        logits = model(xb)
        loss = nn.functional.cross_entropy(logits, yb) + (logits.float().softmax(-1) * prior).sum() * 0
    opt.zero_grad(set_to_none=True)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
print("ok")
