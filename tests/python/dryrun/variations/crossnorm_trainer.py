# A trainer that moves its network to the GPU, wraps it in DataParallel over every GPU, then
# converts its BatchNorm layers (crossnorm.py). On one GPU DataParallel moves the converted network
# itself and this runs; with two or more its first forward fails on the new cpu counters.
# Variants (argv[1]) are the fixed twins: the network moved after the conversion, the counters
# replaced by cuda tensors, a DataParallel told to use GPU 0 only.
import sys

import torch
import torch.nn as nn

from crossnorm import CrossReplicaNorm, to_cross_replica


class Backbone(nn.Module):
    def __init__(self, classes=5):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                      nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU())
        self.head = nn.Conv2d(16, classes, 1)

    def forward(self, x):
        return self.head(self.features(x)).mean((2, 3))


class Trainer:
    def __init__(self, variant):
        self.variant = variant
        self.net = self._build()
        self.opt = torch.optim.SGD(self.net.parameters(), lr=0.05)

    def _build(self):
        net = Backbone()
        net.cuda()
        net = nn.DataParallel(net, device_ids=[0]) if self.variant == "gpu0" else nn.DataParallel(net)
        net = to_cross_replica(net)
        if self.variant == "move_after":
            net.to("cuda")
        if self.variant == "cuda_counters":
            for m in net.modules():
                if isinstance(m, CrossReplicaNorm):
                    m.num_batches_tracked = torch.zeros((), dtype=torch.long, device="cuda")
        return net

    def _step(self, x, y):
        logits = self.net(x)  # dryrun-expect: DEV910  # dryrun-expect(gpus2): DEV903
        loss = nn.functional.cross_entropy(logits, y)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return loss.item()

    def fit(self, steps=3):
        for _ in range(steps):
            x, y = torch.randn(4, 3, 16, 16).cuda(), torch.randint(0, 5, (4,)).cuda()
            loss = self._step(x, y)
        return loss


if __name__ == "__main__":
    print("loss", round(Trainer(sys.argv[1] if len(sys.argv) > 1 else "as_written").fit(), 4))
