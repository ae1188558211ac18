"""Train a tiny causal language model (clean version).

Clean counterpart of 04_inputs_on_cpu.py: the padding mask and position ids are created with
`device=`, and the loss weights are created on the device too.
"""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

VOCAB, DIM, SEQ = 256, 64, 32


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, DIM)
        self.pos = nn.Embedding(SEQ, DIM)
        layer = nn.TransformerEncoderLayer(DIM, nhead=4, dim_feedforward=4 * DIM, batch_first=True)
        self.blocks = nn.TransformerEncoder(layer, num_layers=2)
        self.lm_head = nn.Linear(DIM, VOCAB)

    def forward(self, input_ids, position_ids, padding_mask):
        h = self.tok(input_ids) + self.pos(position_ids)
        return self.lm_head(self.blocks(h, src_key_padding_mask=padding_mask))


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = TinyLM().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)

    # Rare tokens get a larger weight in the loss.
    token_weights = torch.ones(VOCAB, device=device)
    token_weights[128:] = 2.0
    criterion = nn.CrossEntropyLoss(weight=token_weights)

    data = TensorDataset(torch.randint(0, VOCAB, (128, SEQ + 1)))
    loader = DataLoader(data, batch_size=16, shuffle=True)
    for step, (tokens,) in enumerate(loader):
        tokens = tokens.to(device)
        input_ids, targets = tokens[:, :-1], tokens[:, 1:]
        position_ids = torch.arange(SEQ, device=device).unsqueeze(0).expand(input_ids.shape[0], -1)
        padding_mask = torch.zeros(input_ids.shape, dtype=torch.bool, device=device)
        logits = model(input_ids, position_ids, padding_mask)
        loss = criterion(logits.reshape(-1, VOCAB), targets.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step}: loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
