# AMP + GradScaler training that saves its checkpoint on the GPU and resumes from it with
# map_location="cpu": model, optimizer and scaler states are moved back by load_state_dict, the
# EMA weights kept in a plain dict are not. The best loss comes back as a 0-dim cpu tensor, which
# CUDA accepts in a comparison with a cuda tensor.
import argparse
import os

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--ckpt", default="amp_ckpt.pt")
parser.add_argument("--resume", action="store_true")
args = parser.parse_args()

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 1)).to(device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
scaler = torch.amp.GradScaler("cuda", enabled=device.type == "cuda")
ema = {k: v.detach().clone() for k, v in model.state_dict().items()}
best = torch.tensor(float("inf"), device=device)

if args.resume and os.path.exists(args.ckpt):
    ckpt = torch.load(args.ckpt, map_location="cpu")
    model.load_state_dict(ckpt["model"])
    opt.load_state_dict(ckpt["opt"])
    scaler.load_state_dict(ckpt["scaler"])
    ema = ckpt["ema"]
    best = ckpt["best"]

for step in range(4):
    x = torch.randn(16, 12, device=device)
    y = x[:, :1] * 2
    with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=device.type == "cuda"):
        loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad(set_to_none=True)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    with torch.no_grad():
        for k, v in model.state_dict().items():
            ema[k].mul_(0.9).add_(v, alpha=0.1)  # dryrun-expect(resume): DEV901
    if loss.detach() < best:
        best = loss.detach()

torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "scaler": scaler.state_dict(), "ema": ema,
            "best": best}, args.ckpt)
print("best", round(best.item(), 4))
