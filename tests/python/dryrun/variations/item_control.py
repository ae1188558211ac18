# .item() drives the control flow: early stopping on the loss, a phase switch on the accuracy, a
# loop count from a mask. The mix sits in the phase that only runs once the accuracy is reached, so
# only real values find it.
import torch
import torch.nn as nn

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "cpu"
x = torch.randn(128, 2, device=device)
y = (x[:, 0] + x[:, 1] > 0).long()
model = nn.Linear(2, 2).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.5)
temperature = torch.tensor([2.0])
calibrating = False
for epoch in range(100):
    logits = model(x)
    if calibrating:
        logits = logits / temperature  # dryrun-expect: DEV901
    loss = nn.functional.cross_entropy(logits, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    acc = (logits.argmax(1) == y).float().mean().item()
    if acc > 0.9 and not calibrating:
        print("calibrating from epoch", epoch)
        calibrating = True
    if loss.item() < 0.2:
        print("early stop at epoch", epoch)
        break
wrong = int((model(x).argmax(1) != y).sum().item())
for i in range(wrong):
    pass
print("acc", round(acc, 3), "wrong", wrong)
