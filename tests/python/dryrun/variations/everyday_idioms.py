# A correct training script full of everyday idioms: the dry run must find nothing and run it to its end
# (each idiom once broke the emulation: numpy() recursed, copy.deepcopy(model) left its copy on the
# cpu, tolist() under inference_mode read a wrapper, map_location="cuda" gave tensors on "cuda" that
# differed from "cuda:0", a map_location function calling storage.cuda() failed).
import copy
import io
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Shapes(Dataset):
    def __init__(self, n=32):
        self.x = np.random.randn(n, 3, 8, 8).astype(np.float32)
        self.y = np.random.randint(0, 4, n)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return torch.from_numpy(self.x[i]), int(self.y[i])


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 4)
        self.register_buffer("scale", torch.ones(1))

    def forward(self, x):
        h = F.adaptive_avg_pool2d(F.relu(self.bn(self.conv(x))), 1).flatten(1)
        return self.fc(h) * self.scale


model = Net().to(device)
best = copy.deepcopy(model.state_dict())
ema = copy.deepcopy(model).eval()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4)
scaler = torch.amp.GradScaler("cuda")
preds, labels = [], []
for x, y in DataLoader(Shapes(), batch_size=8, shuffle=True):
    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    with torch.autocast("cuda", dtype=torch.float16):
        out = model(x)
        loss = F.cross_entropy(out, y)
    opt.zero_grad(set_to_none=True)
    scaler.scale(loss).backward()
    scaler.unscale_(opt)
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(opt)
    scaler.update()
    with torch.no_grad():
        for pe, pm in zip(ema.parameters(), model.parameters()):
            pe.mul_(0.99).add_(pm.detach(), alpha=0.01)
    preds.append(out.argmax(1).cpu().numpy())
    labels.append(y.cpu().numpy())
    if math.isnan(loss.item()):
        break
sched.step()
accuracy = (np.concatenate(preds) == np.concatenate(labels)).mean()
print(f"loss {loss.item():.3f} accuracy {accuracy:.2f} {out[:1]}")

buf = io.BytesIO()
torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "scaler": scaler.state_dict()}, buf)
for where in ("cuda", device, {"cuda:0": "cuda"}, lambda storage, loc: storage.cuda()):
    buf.seek(0)
    ckpt = torch.load(buf, map_location=where)
    model.load_state_dict(ckpt["model"])
    opt.load_state_dict(ckpt["opt"])
    scaler.load_state_dict(ckpt["scaler"])
    assert ckpt["model"]["fc.weight"].device == torch.device("cuda", 0)
    model(torch.randn(2, 3, 8, 8, device=device)).sum().backward()
    opt.step()

model.eval()
with torch.inference_mode():
    probs = F.softmax(ema(torch.randn(2, 3, 8, 8, device=device)), dim=-1)
    top = probs.topk(2).indices.tolist()
    onehot = F.one_hot(torch.tensor(top[0], device=device), 4)
    print(top, onehot.sum().item(), np.asarray(probs.cpu()).shape, repr(probs.half()))
