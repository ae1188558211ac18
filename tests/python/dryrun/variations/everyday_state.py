# A correct script: RNG states saved with a checkpoint and restored (the states are cpu ByteTensors the
# generators read from memory), torch.cuda queries a training loop logs, and everyday tensor ops on the
# GPU mixed with cpu scalars. The dry run must find nothing and run it to its end.
import io
import random

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(1)
torch.cuda.manual_seed_all(1)
dev = torch.device("cuda")
x = torch.as_tensor(np.ones((2, 3), dtype=np.float32), device=dev)
y = torch.from_numpy(np.zeros((2, 3), dtype=np.float32)).to(dev)
z = x.new_tensor([1.0, 2.0, 3.0]) + torch.full_like(y, 2.0) + torch.zeros_like(x)
emb = nn.Embedding(10, 4).cuda()
print(z.sum().item(), emb(torch.arange(3, device=x.device)).shape, x.get_device(), str(x.device))

state = {"torch": torch.get_rng_state(), "cuda": torch.cuda.get_rng_state_all(), "np": np.random.get_state(),
         "py": random.getstate(), "seed": torch.cuda.initial_seed()}
buf = io.BytesIO()
torch.save(state, buf)
buf.seek(0)
restored = torch.load(buf, weights_only=False)
torch.set_rng_state(restored["torch"])
torch.cuda.set_rng_state_all(restored["cuda"])
np.random.set_state(restored["np"])
random.setstate(restored["py"])
gen = torch.Generator()
gen.set_state(restored["torch"])
print(torch.randn(2, generator=gen).shape)

torch.cuda.reset_peak_memory_stats()
torch.cuda.reset_max_memory_cached()
print(torch.cuda.max_memory_allocated() / 2**20, torch.cuda.get_per_process_memory_fraction(), torch.cuda.utilization())
print((x * torch.tensor(0.5)).device, (x + torch.tensor(1.0)).device, (x * x.sum()).device)
m = nn.Linear(3, 3)
m.register_buffer("mask", torch.ones(3), persistent=False)
m.cuda()
lst = [torch.randn(2, device=dev) for _ in range(3)]
print(m(x * m.mask).device, torch.stack(lst).device, sum(lst).device, F.normalize(x, dim=-1).norm(dim=-1).tolist())
