import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Sequential(nn.Linear(8, 8), nn.ReLU())
model.to(device)
model.head = nn.Linear(8, 2)
x = torch.randn(4, 8, device=device)
y = model(x)
