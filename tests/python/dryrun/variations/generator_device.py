# Random generators on the wrong device: a cuda generator given to a DataLoader that shuffles on the
# cpu, to a cpu factory, and CUDA's default generator to randperm on the cpu. A cuda generator
# drawing for a cuda tensor is fine.
import torch
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "cpu"
gen = torch.Generator(device=device)
gen.manual_seed(0)
loader = DataLoader(TensorDataset(torch.randn(32, 4)), batch_size=8, shuffle=True, generator=gen)
total = 0
for (xb,) in loader:  # dryrun-expect: DEV904
    total += xb.shape[0]
noise = torch.randn(8, 4, generator=gen)  # dryrun-expect: DEV904
drop = torch.rand(8, 4, device=device, generator=gen) > 0.1
if torch.cuda.is_available():
    order = torch.randperm(10, generator=torch.cuda.default_generators[0])  # dryrun-expect: DEV904
print("rows", total, "kept", int(drop.sum()))
