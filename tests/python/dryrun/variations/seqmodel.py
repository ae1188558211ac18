# The model of the split project (imported by split_train.py through split_trainer.py).
import torch
import torch.nn as nn


class TinyTransformer(nn.Module):
    def __init__(self, vocab=50, dim=16, max_len=32):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_len, dim)
        self.head = nn.Linear(dim, vocab)

    def positions(self, ids):
        return torch.arange(ids.shape[1]).unsqueeze(0)

    def forward(self, ids):
        h = self.tok(ids) + self.pos(self.positions(ids))  # dryrun-expect: DEV901
        return self.head(torch.relu(h))
