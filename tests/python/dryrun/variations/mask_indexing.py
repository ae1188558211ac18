# Boolean masks and index tensors across devices, as CUDA takes them: a cpu mask or cpu index on a
# cuda tensor is allowed (read and write); a cuda mask on a cpu tensor, a cpu mask in
# masked_fill / where on cuda tensors are not.
import torch

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "cpu"
x = torch.randn(10, 4, device=device)
mask = torch.rand(10) > 0.5
picked = x[mask]
x[mask] = 0.0
rows = x[torch.tensor([0, 2, 3])]
scores = torch.randn(10, 4)
on_gpu = x[:, 0] > 0
kept = scores[on_gpu]  # dryrun-expect: DEV902
filled = x.masked_fill(mask.unsqueeze(1), -1.0)  # dryrun-expect: DEV901
merged = torch.where(mask.unsqueeze(1), x, torch.zeros_like(x))  # dryrun-expect: DEV901
print("picked", picked.shape[0], "rows", rows.shape[0], "kept", kept.shape[0], "nonzero", int((x != 0).sum()))
