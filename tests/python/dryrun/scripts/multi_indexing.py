# Indexing mixes: a cpu table indexed by cuda indices, a cuda tensor indexed by cpu indices (allowed),
# index_select with a cpu index (not allowed), gather with a cpu index.
import torch

table = torch.linspace(0, 1, 100)
t = torch.randint(0, 100, (8,), device="cuda")
coef = table[t]                                          # cpu table, cuda index
feats = torch.randn(100, 4, device="cuda")
ok = feats[torch.tensor([1, 2, 3])]                      # cuda tensor, cpu index: allowed
picked = feats.index_select(0, torch.tensor([0, 5]))     # index_select with a cpu index
gathered = feats.gather(1, torch.zeros(100, 1, dtype=torch.long))
print(coef.shape, ok.shape, picked.shape, gathered.shape)
