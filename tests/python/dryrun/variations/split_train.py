# Model and trainer split over two files, imported by the script: each mix at its own file's line.
import torch

from seqmodel import TinyTransformer
from seqtrainer import Trainer

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
trainer = Trainer(TinyTransformer(), device)
for _ in range(3):
    ids = torch.randint(0, 50, (4, 12))
    print("loss", round(trainer.step(ids, ids.roll(-1, dims=1)), 3))
