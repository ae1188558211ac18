# Resume mixes: optimizer state loaded before the model is moved, a cpu running statistic, and a
# conv fed a cpu input.
import os
import tempfile

import torch
import torch.nn as nn

path = os.path.join(tempfile.mkdtemp(), "ckpt.pt")
net = nn.Sequential(nn.Conv2d(1, 4, 3), nn.Flatten(), nn.Linear(4 * 6 * 6, 2))
opt = torch.optim.Adam(net.parameters(), lr=1e-3, foreach=True)
net(torch.randn(2, 1, 8, 8)).sum().backward()
opt.step()
torch.save({"model": net.state_dict(), "opt": opt.state_dict()}, path)

ckpt = torch.load(path, map_location="cpu")
net.load_state_dict(ckpt["model"])
opt.load_state_dict(ckpt["opt"])      # state stays on cpu
net.cuda()
img = torch.randn(1, 1, 8, 8)
print(net(img).shape)                 # conv fed a cpu input
running = torch.zeros(2)
for _ in range(2):
    x = torch.randn(2, 1, 8, 8).cuda()
    out = net(x)
    running = running + out.detach().mean(0)
    out.sum().backward()
    opt.step()
    opt.zero_grad()
