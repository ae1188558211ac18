# DataParallel over every GPU, built around a module on the cpu, then moved (or not) in the ways
# programs do. One GPU moves the module at construction; with two or more only the program's own
# moves count, and the first forward fails if they left a tensor off cuda:0.
import torch
import torch.nn as nn


def net():
    return nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))


x = torch.randn(3, 4).cuda()

never_moved = nn.DataParallel(net())
for _ in range(3):
    never_moved(x)  # dryrun-expect: DEV910  # dryrun-expect(gpus2): DEV903

dtype_only = nn.DataParallel(net()).double()  # a conversion, not a move
dtype_only(x.double())  # dryrun-expect: DEV910  # dryrun-expect(gpus2): DEV903

parts = nn.DataParallel(net())
for layer in parts.module:
    layer.cuda()
parts(x)

half_moved = nn.DataParallel(net())
half_moved.module[0].cuda()
half_moved(x)  # dryrun-expect: DEV910  # dryrun-expect(gpus2): DEV903

inner = net()
by_data = nn.DataParallel(inner)
for t in [*inner.parameters(), *inner.buffers()]:
    t.data = t.data.cuda()
by_data(x)

counted = nn.DataParallel(net(), device_ids=list(range(torch.cuda.device_count())))  # taken as written
counted(x)  # dryrun-expect(gpus2): DEV903

back_on_cpu = nn.DataParallel(net()).cpu()
back_on_cpu(x)  # dryrun-expect: DEV903  # dryrun-expect(gpus2): DEV903


def evaluate():
    wrapped = nn.DataParallel(net())
    return wrapped(x)  # dryrun-expect: DEV910  # dryrun-expect(gpus2): DEV903


evaluate()
evaluate()
print("done")
