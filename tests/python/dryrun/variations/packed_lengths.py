# A GRU tagger over padded batches, the way users write it: pack_padded_sequence needs its lengths on the
# cpu on a GPU machine too. The training loop sends the lengths to the GPU with the batch (CUDA:
# "'lengths' argument should be a 1D CPU int64 tensor"); the evaluation keeps them on the cpu and must
# run clean: an LSTM over the packed batch, pad_packed_sequence's lengths (on the cpu) used for numpy
# and to pick each sequence's last output of the cuda result.
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


class Tagger(nn.Module):
    def __init__(self, vocab=30, dim=8, hidden=12, cell=nn.GRU):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim, padding_idx=0)
        self.rnn = cell(dim, hidden, batch_first=True)
        self.out = nn.Linear(hidden, 3)

    def encode(self, ids, lengths):
        packed = pack_padded_sequence(self.emb(ids), lengths, batch_first=True, enforce_sorted=False)  # dryrun-expect: DEV911
        seq, _ = self.rnn(packed)
        seq, seq_lengths = pad_packed_sequence(seq, batch_first=True, total_length=ids.shape[1])
        return seq, seq_lengths

    def forward(self, ids, lengths):
        seq, seq_lengths = self.encode(ids, lengths)
        last = seq[torch.arange(seq.shape[0]), seq_lengths - 1]
        return self.out(last), seq_lengths


def batch(n=4, t=6):
    lengths = torch.randint(1, t + 1, (n,))
    ids = torch.randint(1, 30, (n, t)) * (torch.arange(t) < lengths[:, None])
    return ids, lengths, torch.randint(0, 3, (n,))


def train(model, device, steps=2):
    opt = torch.optim.Adam(model.parameters())
    for _ in range(steps):
        ids, lengths, y = batch()
        ids, lengths, y = ids.to(device), lengths.to(device), y.to(device)
        logits, _ = model(ids, lengths)
        loss = nn.functional.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()


@torch.no_grad()
def evaluate(model, device):
    ids, lengths, _ = batch()
    logits, seq_lengths = model(ids.to(device), lengths)
    return logits.argmax(-1).cpu().numpy(), seq_lengths.numpy()


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
gru = Tagger().to(device)
train(gru, device)
print(evaluate(gru, device))
print(evaluate(Tagger(cell=nn.LSTM).to(device), device))
