# TorchScript archives and pickles of GPU models, and values gathered from GPU scalars: torch.jit.save
# of a scripted / traced module whose weights are on the GPU, torch.jit.load back onto the GPU (no
# map_location, "cuda", a dict), pickle / deepcopy of a module, torch.tensor of a list of GPU scalars.
# Correct except the last call: an archive loaded onto the cpu called with a GPU batch.
import io
import pickle

import torch
import torch.nn as nn

dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Sequential(nn.Linear(5, 5), nn.ReLU(), nn.Linear(5, 2)).to(dev)
x = torch.randn(4, 5, device=dev)

archive = io.BytesIO()
torch.jit.save(torch.jit.script(model), archive)
for where in (None, "cuda", {"cuda:0": "cuda:0"}):
    archive.seek(0)
    loaded = torch.jit.load(archive, map_location=where)
    assert torch.allclose(loaded(x), model(x))
traced = io.BytesIO()
torch.jit.save(torch.jit.trace(model, x), traced)
traced.seek(0)
print(torch.jit.load(traced)(x).device == x.device)

clone = pickle.loads(pickle.dumps(model))
print(torch.allclose(clone(x), model(x)), next(clone.parameters()).device.type == dev.type)

state = io.BytesIO()
torch.save(clone.state_dict(), state)  # a checkpoint written after pickling loads with weights_only
state.seek(0)
clone.load_state_dict(torch.load(state, map_location=dev, weights_only=True))

losses = [model(x).pow(2).mean().detach() for _ in range(3)]
summary = torch.tensor(losses)
print(summary.shape, summary.device, round(float(torch.stack(losses).mean()), 4) == round(float(summary.mean()), 4))

archive.seek(0)
on_cpu = torch.jit.load(archive, map_location="cpu")
print(on_cpu(x).shape)  # dryrun-expect: DEV901
