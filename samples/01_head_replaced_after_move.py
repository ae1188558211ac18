"""Fine-tune a small text classifier: the new output head is created after the move.

The backbone is moved with `model.to(device)`, then `model.head` is replaced by a fresh
`nn.Linear`, which is built on the cpu. The first forward pass on a GPU fails with
"Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!".
"""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class TextClassifier(nn.Module):
    def __init__(self, vocab_size=1000, dim=64, num_classes=10):
        super().__init__()
        self.embed = nn.EmbeddingBag(vocab_size, dim)
        self.encoder = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.LayerNorm(dim))
        self.head = nn.Linear(dim, num_classes)

    def forward(self, tokens):
        return self.head(self.encoder(self.embed(tokens)))


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = TextClassifier()
    model.to(device)

    # Transfer to a 3-class task: freeze the backbone and swap in a new head.
    for param in model.parameters():
        param.requires_grad = False
    model.head = nn.Linear(64, 3)

    data = TensorDataset(torch.randint(0, 1000, (64, 12)), torch.randint(0, 3, (64,)))
    loader = DataLoader(data, batch_size=16, shuffle=True)
    optimizer = torch.optim.AdamW(model.head.parameters(), lr=1e-3)

    model.train()
    for epoch in range(3):
        for tokens, labels in loader:
            tokens, labels = tokens.to(device), labels.to(device)
            loss = nn.functional.cross_entropy(model(tokens), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
