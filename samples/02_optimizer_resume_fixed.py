"""Resume an image regressor from a checkpoint: the model is moved before the state is loaded.

Clean counterpart of 02_optimizer_resume.py: `model.to(device)` comes first, so
`optimizer.load_state_dict` casts Adam's state onto the parameters' device.
"""
import argparse
import os

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def build_model():
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        nn.Flatten(), nn.Linear(32, 1),
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--resume", default=None)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--out", default="runs/regressor.pt")
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    model = build_model().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-4)
    start_epoch = 0
    if args.resume:
        checkpoint = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        start_epoch = checkpoint["epoch"] + 1

    data = TensorDataset(torch.randn(64, 3, 32, 32), torch.randn(64, 1))
    loader = DataLoader(data, batch_size=16, shuffle=True)
    for epoch in range(start_epoch, start_epoch + args.epochs):
        for images, targets in loader:
            images, targets = images.to(device), targets.to(device)
            loss = nn.functional.mse_loss(model(images), targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        os.makedirs(os.path.dirname(args.out), exist_ok=True)
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}, args.out)
        print(f"epoch {epoch}: loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
