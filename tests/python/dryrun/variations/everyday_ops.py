# A correct script: in-place view ops on GPU tensors (t_, unsqueeze_, stft's squeeze_ / transpose_),
# CTC with cpu length tensors (as its docs show) and every reduction, a transformer under
# inference_mode, type_as of a GPU tensor, vmap / grad, metrics and losses on the GPU. The dry run
# must find nothing, run it to its end, and print what a cpu run prints.
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap

torch.manual_seed(0)
dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")

y = torch.randn(3, 4, device=dev)
y.t_()
y.unsqueeze_(0)
assert y.shape == (1, 4, 3), y.shape
spec = torch.stft(torch.randn(64, device=dev), n_fft=16, window=torch.hann_window(16, device=dev), return_complex=True)
assert spec.shape == (9, 17), spec.shape
print(tuple(y.shape), tuple(spec.shape), round(spec.abs().sum().item(), 3))

T, N, C = 12, 2, 5
log_probs = torch.randn(T, N, C, device=dev).log_softmax(2).detach().requires_grad_()
targets = torch.randint(1, C, (N, 4), dtype=torch.long)
input_lengths = torch.full((N,), T, dtype=torch.long)
target_lengths = torch.tensor([4, 3])
ctc = nn.CTCLoss(zero_infinity=True)
losses = [F.ctc_loss(log_probs, targets.to(dev), input_lengths, target_lengths),
          F.ctc_loss(log_probs, targets, input_lengths, target_lengths, reduction="sum"),
          F.ctc_loss(log_probs, targets.flatten()[:7].to(dev), (T, T), (4, 3), reduction="none").sum(),
          ctc(log_probs, targets.to(dev), input_lengths.to(dev), target_lengths.to(dev))]
sum(losses).backward()
print([round(v.item(), 3) for v in losses], tuple(log_probs.grad.shape))

enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2).to(dev).eval()
x = torch.randn(2, 5, 8, device=dev)
pad = torch.tensor([[False] * 5, [False] * 3 + [True] * 2], device=dev)
mha = nn.MultiheadAttention(8, 2).to(dev).eval()
with torch.inference_mode():
    out = enc(x, src_key_padding_mask=pad)
    att, _ = mha(x.transpose(0, 1), x.transpose(0, 1), x.transpose(0, 1))
print(tuple(out.shape), tuple(att.shape), round(out[0].sum().item(), 3))

w = torch.ones(4).type_as(x)
scores = (x.mean(1)[:, :4] * w).softmax(-1)
print(w.device == x.device, round(scores.sum().item(), 3))

model = nn.Sequential(nn.Linear(8, 4), nn.Tanh(), nn.Linear(4, 1)).to(dev)
params = {k: v.detach() for k, v in model.named_parameters()}
per_sample = vmap(grad(lambda p, xi: functional_call(model, p, (xi,)).sum()), in_dims=(None, 0))(params, x[0])
print({k: tuple(v.shape) for k, v in per_sample.items()}["0.weight"])

# a sparse embedding gradient (built in C++ backward from its indices and values) and SparseAdam
emb = nn.Embedding.from_pretrained(torch.randn(10, 4), freeze=False, sparse=True).to(dev)
sparse_opt = torch.optim.SparseAdam(emb.parameters(), lr=0.01)
emb(torch.tensor([[1, 2], [3, 4]], device=dev)).sum().backward()
sparse_opt.step()
print(emb.weight.grad.is_sparse, round(emb.weight.sum().item(), 3))

# a module moved to where a tensor is (Module.to(tensor)), or by a legacy tensor type
head = nn.Linear(8, 2).to(x)
legacy = nn.Linear(8, 2).type(torch.cuda.FloatTensor if dev.type == "cuda" else torch.FloatTensor)
print(tuple(head(x).shape), tuple(legacy(x).shape))

# printed tensors read as torch prints them (device before dtype, then autograd)
shown = repr((torch.ones(2, device=dev, dtype=torch.float64, requires_grad=True) * 2).sum())
assert shown.endswith("dtype=torch.float64, grad_fn=<SumBackward0>)"), shown
print(shown)
