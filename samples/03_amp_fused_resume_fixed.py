"""Mixed-precision training with a fused AdamW, resumed from a checkpoint (clean version).

Clean counterpart of 03_amp_fused_resume.py: the checkpoint is mapped onto the training
device, and the GradScaler's state is saved and restored with the model and optimizer.
"""
import argparse
import os

import torch
import torch.nn as nn

device = torch.device("cuda")


def build_model():
    return nn.Sequential(nn.Linear(128, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU(), nn.Linear(256, 10))


def train_steps(model, optimizer, scaler, steps):
    for _ in range(steps):
        x = torch.randn(32, 128, device=device)
        y = torch.randint(0, 10, (32,), device=device)
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    return loss


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--ckpt", default="ckpt/last.pth")
    args = parser.parse_args()

    model = build_model().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01, fused=True)
    scaler = torch.amp.GradScaler("cuda")

    if args.resume:
        checkpoint = torch.load(args.ckpt, map_location=device)
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        scaler.load_state_dict(checkpoint["scaler"])

    loss = train_steps(model, optimizer, scaler, steps=10)
    os.makedirs(os.path.dirname(args.ckpt), exist_ok=True)
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scaler": scaler.state_dict()},
               args.ckpt)
    print("loss", loss.item())


if __name__ == "__main__":
    main()
