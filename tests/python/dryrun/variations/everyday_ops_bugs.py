# The same kinds of code with device bugs: a cpu weight in a loss after type_as, RNG states loaded
# with map_location="cuda" (CUDA's generators take cpu ByteTensors only), a cpu tensor meeting a GPU
# one after an in-place view op, an LSTM's initial state left on the cpu, a cpu batch into a GPU GRU.
# Each is reported at its line, once, and the run goes on.
import io

import torch
import torch.nn.functional as F

dev = torch.device("cuda")
logits = torch.randn(6, 3, device=dev)
labels = torch.randint(0, 3, (6,)).type_as(logits).long()
weights = torch.ones(3).type_as(torch.zeros(1, dtype=torch.float64)).float()
loss = F.cross_entropy(logits, labels, weight=weights)  # dryrun-expect: DEV901

buf = io.BytesIO()
torch.save({"cpu": torch.get_rng_state(), "cuda": torch.cuda.get_rng_state()}, buf)
buf.seek(0)
state = torch.load(buf, map_location=dev)
torch.set_rng_state(state["cpu"])  # dryrun-expect: DEV911
torch.cuda.set_rng_state(state["cuda"])  # dryrun-expect: DEV911

bias = torch.zeros(3, 1)
bias.t_()
scores = logits + bias  # dryrun-expect: DEV901
print(round(loss.item(), 3), tuple(scores.shape))

# recurrent layers check their hidden state and weights against the input in C++, with their own words
lstm = torch.nn.LSTM(3, 4, batch_first=True).to(dev)
h0 = (torch.zeros(1, 6, 4), torch.zeros(1, 6, 4))
seq, _ = lstm(logits.unsqueeze(1), h0)  # dryrun-expect: DEV901
gru = torch.nn.GRU(3, 4).to(dev)
out, _ = gru(logits.unsqueeze(0).cpu())  # dryrun-expect: DEV901
seq.sum().backward()
print(tuple(seq.shape), tuple(out.shape), lstm.weight_ih_l0.grad is not None)
