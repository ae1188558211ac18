# A mix inside a Trainer class method, two calls below the training loop; everything else is on
# the device, so the one finding is the regulariser's anchor tensor.
import torch
import torch.nn as nn


class Trainer:
    def __init__(self, model):
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        self.model = model.to(self.device)
        self.anchor = [p.detach().clone().cpu() for p in model.parameters()]
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def fit(self, epochs):
        for epoch in range(epochs):
            loss = self._run_epoch(epoch)
        return loss

    def _run_epoch(self, epoch):
        x = torch.randn(16, 8, device=self.device)
        y = torch.randn(16, 1, device=self.device)
        loss = self._loss(x, y)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return loss.item()

    def _loss(self, x, y):
        fit = nn.functional.mse_loss(self.model(x), y)
        return fit + self._penalty()

    def _penalty(self):
        return sum(((p - a) ** 2).sum() for p, a in zip(self.model.parameters(), self.anchor))  # dryrun-expect: DEV901


print("final", round(Trainer(nn.Linear(8, 1)).fit(3), 4))
