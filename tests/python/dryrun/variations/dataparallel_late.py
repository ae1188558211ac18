# A head attached after .cuda(), then DataParallel. With one GPU, DataParallel moves its module to
# device_ids[0] when it is built, so this runs (DEV910 says it fails with more); with two it only
# checks, in forward, and fails (DEV903).
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 16), nn.ReLU())

    def forward(self, x):
        return self.head(self.body(x))


model = Net().cuda()
model.head = nn.Linear(16, 2)
model = nn.DataParallel(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(2):
    out = model(torch.randn(4, 8).cuda())  # dryrun-expect: DEV910  # dryrun-expect(gpus2): DEV903
    loss = out.pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("gpus", torch.cuda.device_count(), "loss", round(loss.item(), 4))
