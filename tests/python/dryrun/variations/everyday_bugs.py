# Device bugs in everyday training code, one per setting: a cpu target under autocast + GradScaler,
# an EMA copy left on the cpu, a metric against cpu labels, cpu indices into a GPU embedding, a cpu
# attention mask (scaled_dot_product_attention, MultiheadAttention's key_padding_mask), a cpu weight
# inside torch.utils.checkpoint and inside vmap, a forward hook's output joined with a cpu tensor,
# torch.where with a cpu branch. Each is reported at its line, once (with a count), and the run goes on.
import copy, torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.checkpoint import checkpoint
from torch.func import vmap
dev = torch.device("cuda")
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).to(dev)
ema = copy.deepcopy(model).cpu()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cuda")
x, y = torch.randn(6, 4, device=dev), torch.randint(0, 3, (6,))
feats = []
model[0].register_forward_hook(lambda m, i, o: feats.append(o))
for step in range(2):
    with torch.autocast("cuda"):
        out = model(x)
        loss = F.cross_entropy(out, y)  # dryrun-expect: DEV901
    scaler.scale(loss).backward(); scaler.step(opt); scaler.update(); opt.zero_grad()
    with torch.no_grad():
        for pe, pm in zip(ema.parameters(), model.parameters()):
            pe.mul_(0.9).add_(pm, alpha=0.1)  # dryrun-expect: DEV901
correct = (out.argmax(1) == y).sum().item()  # dryrun-expect: DEV901
emb = nn.Embedding(10, 4).to(dev)
e = emb(torch.tensor([1, 2, 3]))  # dryrun-expect: DEV901
q = torch.randn(1, 2, 3, 4, device=dev)
mask = torch.ones(3, 3, dtype=torch.bool).tril()
a = F.scaled_dot_product_attention(q, q, q, attn_mask=mask)  # dryrun-expect: DEV901
mha = nn.MultiheadAttention(4, 2, batch_first=True).to(dev)
kpm = torch.zeros(2, 3, dtype=torch.bool)
o, _ = mha(q[0], q[0], q[0], key_padding_mask=kpm)  # dryrun-expect: DEV901
w = torch.randn(8, 8)
h = checkpoint(lambda t: t @ w, torch.randn(2, 8, device=dev, requires_grad=True), use_reentrant=False)  # dryrun-expect: DEV901
v = vmap(lambda r: r * w[0])(torch.randn(3, 8, device=dev))  # dryrun-expect: DEV901
allf = torch.cat([feats[0], torch.zeros(6, 8)])  # dryrun-expect: DEV901
pick = torch.where(out > 0, out, torch.zeros(6, 3))  # dryrun-expect: DEV901
print("end", correct)
