"""Semantics found missing by the unseen batch I (tests/fixtures/engine/unseen/i_*), each tested on the
variations a user writes (renamed, split into files, one helper deeper, inside a trainer class) and on
the neighbours that must stay silent:
- a torchvision dataset built with a tensor-making `transform=` gives `(image, target)` items whose image
  is a cpu tensor (the dataset loads it from disk and transforms it on the host): `ds[i][0]` fed to a model
  on the GPU is an input left on the cpu;
- a bare "cuda" is the *current* device, cuda:0 when the program never sets it (no `torch.cuda.set_device`,
  no framework that sets it per process): it differs from `cuda:1` (the lattice's CURRENT_IS_DEFAULT);
  a single-device DataParallel calls its module without switching the current device;
- `setattr(self, name, value)` with the name known at the call (a `register_buffer`-like helper) stores the
  attribute; `t.device != torch.device("cuda")` is always true (a tensor's device names its index) and
  `type(t) == torch.Tensor` is decided on one qualified name;
- a full reduction without `dim` (`logits.argmax()`) is 0-dim (a cpu 0-dim tensor mixes with any device);
  `.view(-1)` gives it a dimension again;
- a torch_geometric dataset's item is a graph built on the cpu (GRAPH: `.to()` moves it in place) whose
  constructor fields (`data.x`, `data.edge_index`, `data.y` ...) are where the graph is (tables
  graph_datasets, from the wheel);
- `.cpu()` on a value of unknown kind (a library layer's output) is on the cpu, like `.to()` / `.cuda()`;
- `a if <sizes only> else torch.zeros(...)`: a branch made on the cpu, chosen by a test that reads only sizes
  (shapes, `len()`, constants), is taken on GPU machines too: the value is on the cpu on that path."""

from __future__ import annotations


from devflow.api import check_path
from project_fixtures import codes as _codes, write_project as _project


DATA = """
from torchvision import datasets, transforms

to_tensor = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.5,), (0.5,))])
test_set = datasets.MNIST(root="data", train=False, download=True, transform=to_tensor)
"""


# ---- a torchvision dataset's items: the transformed image is a cpu tensor
def test_dataset_sample_split_into_files_through_a_helper(tmp_path):
    _project(tmp_path, {"data.py": DATA, "infer.py": """
        import torch
        from data import test_set


        def predict_one(net, dataset, index, dev):
            image, label = dataset[index]
            with torch.no_grad():
                return net(image.unsqueeze(0)).argmax(1).item() == label


        dev = torch.device("cuda")
        net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 10)).to(dev)
        print(predict_one(net, test_set, 0, dev))
        """})
    assert _codes(tmp_path, "infer.py") == [(8, "DEV202")]


def test_dataset_sample_inside_an_evaluator_class(tmp_path):
    _project(tmp_path, {"data.py": DATA, "evaluate.py": """
        import torch
        import data


        class Evaluator:
            def __init__(self, model, device):
                self.device = device
                self.model = model.to(device)

            def show(self, i):
                sample = data.test_set[i][0]
                self.model.eval()
                return self.model(sample)


        Evaluator(torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 10)), "cuda").show(3)
        """})
    found = _codes(tmp_path, "evaluate.py")
    assert found and all(code == "DEV202" for _, code in found)


def test_dataset_sample_moved_or_model_on_cpu_is_silent(tmp_path):
    _project(tmp_path, {"data.py": DATA, "moved.py": """
        import torch
        from data import test_set

        device = "cuda" if torch.cuda.is_available() else "cpu"
        model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 10)).to(device)
        x, y = test_set[0]
        pred = model(x.to(device))
        """, "cpu_only.py": """
        import torch
        from data import test_set

        model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 10))
        x, y = test_set[0]
        pred = model(x)
        """})
    assert _codes(tmp_path, "moved.py") == []
    assert _codes(tmp_path, "cpu_only.py") == []


def test_dataset_without_a_tensor_transform_is_unknown(tmp_path):
    # no transform: the item is a PIL image (the model call fails for another reason); a user transform of
    # unknown kind: unknown; both silent
    _project(tmp_path, {"a.py": """
        import torch
        from torchvision import datasets
        from my_transforms import build

        ds = datasets.CIFAR10("data", train=False)
        ds2 = datasets.CIFAR10("data", train=False, transform=build())
        model = torch.nn.Linear(3, 3).cuda()
        img, _ = ds2[0]
        out = model(img)
        """})
    assert _codes(tmp_path, "a.py") == []


SAMPLER = """
import torch


class Sampler:
    def __init__(self, model):
        self.model = model

    def register_buffer(self, name, attr):
        if type(attr) == torch.Tensor:
            if attr.device != torch.device("cuda"):
                attr = attr.to(torch.device("cuda"))
        setattr(self, name, attr)

    def make_schedule(self, steps):
        self.register_buffer("alphas", torch.linspace(0.1, 0.9, steps))

    def encode(self, x0, t):
        return self.alphas.gather(-1, t) * x0
"""


# ---- a bare "cuda" is the current device: cuda:0 unless the program sets it
def test_bare_cuda_buffers_meet_a_model_on_the_second_gpu_split_into_files(tmp_path):
    _project(tmp_path, {"sampling/sampler.py": SAMPLER, "run.py": """
        import torch
        from sampling.sampler import Sampler


        def main():
            device = torch.device("cuda:1")
            model = torch.nn.Linear(4, 4).to(device)
            sampler = Sampler(model)
            sampler.make_schedule(10)
            x0 = torch.randn(4, device=device)
            t = torch.tensor([3]).to(device)
            return sampler.encode(x0, t)


        main()
        """})
    found = _codes(tmp_path, "run.py")
    assert [c for _, c in found] == ["DEV202"]


def test_bare_cuda_is_silent_when_the_program_sets_the_current_device_or_the_index_is_unknown(tmp_path):
    _project(tmp_path, {"sampling/sampler.py": SAMPLER, "set_device.py": """
        import torch
        from sampling.sampler import Sampler

        torch.cuda.set_device(1)
        sampler = Sampler(None)
        sampler.make_schedule(10)
        sampler.encode(torch.randn(4, device="cuda:1"), torch.tensor([3]).to("cuda:1"))
        """, "from_cli.py": """
        import sys
        import torch
        from sampling.sampler import Sampler

        device = torch.device(sys.argv[1])
        sampler = Sampler(None)
        sampler.make_schedule(10)
        sampler.encode(torch.randn(4, device=device), torch.tensor([3]).to(device))
        """, "first_gpu.py": """
        import torch
        from sampling.sampler import Sampler

        sampler = Sampler(None)
        sampler.make_schedule(10)
        sampler.encode(torch.randn(4, device="cuda:0"), torch.tensor([3]).cuda(0))
        """})
    for name in ("set_device.py", "from_cli.py", "first_gpu.py"):
        assert _codes(tmp_path, name) == [], name


def test_single_device_dataparallel_keeps_the_current_device_inside_a_trainer(tmp_path):
    _project(tmp_path, {"train.py": """
        import torch
        import torch.nn as nn


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(3, 3)

            def forward(self, x):
                return self.fc(x) + torch.ones(3, device="cuda")


        class Trainer:
            def __init__(self, gpu):
                self.net = nn.DataParallel(Net().to(f"cuda:{gpu}"), device_ids=[gpu])

            def step(self, x):
                return self.net(x).sum()


        Trainer(1).step(torch.randn(8, 3))
        many = nn.DataParallel(Net().cuda())  # replicas run with the current device set to theirs
        many(torch.randn(8, 3))
        """})
    found = _codes(tmp_path, "train.py")
    assert [c for _, c in found] == ["DEV202"]


def test_device_comparisons_decided_and_not(tmp_path):
    _project(tmp_path, {"a.py": """
        import torch


        def to_current(x):
            if x.device != torch.device("cuda"):
                x = x.to(torch.device("cuda"))
            return x


        def to_given(x, device):
            if x.device != device:
                x = x.to(device)
            return x


        w = to_current(torch.ones(3))
        print(w + torch.ones(3, device="cuda:2"))
        v = to_given(torch.ones(3), torch.device("cuda"))
        print(v + torch.ones(3, device="cuda:2"))
        u = to_given(torch.load("u.pt", map_location="cuda:2"), torch.device("cuda"))
        print(u + torch.ones(3, device="cuda:2"))
        """})
    found = _codes(tmp_path, "a.py")
    # (batch aa: a cpu tensor's device against a cuda device is decided as well, so `v` is moved to the
    # current device, cuda:0, and meets cuda:2; two cuda devices that may be one stay undecided: `u`)
    assert [line for line, _ in found] == [16, 18]


# ---- full reductions are 0-dim
def test_argmax_without_dim_is_a_cpu_scalar_until_viewed(tmp_path):
    _project(tmp_path, {"a.py": """
        import torch


        class Attack:
            def __init__(self, labels, logits):
                self.labels = labels.cuda()
                self.logits = logits.cpu()

            def wrong_class(self, node):
                return self.logits[node].argmax()

            def ok(self, node):
                return torch.where(self.labels == self.wrong_class(node))[0]

            def bug(self, node):
                best = self.wrong_class(node).view(-1)
                return torch.where(self.labels == best)[0]

            def bug_dim(self, node):
                return self.labels == self.logits.argmax(dim=1)


        a = Attack(torch.randint(0, 3, (5,)), torch.randn(5, 3))
        a.ok(1)
        a.bug(1)
        a.bug_dim(1)
        """})
    # reported once, where the logits are copied to the cpu (the fix's place), naming the meet at line 17
    found = check_path(str(tmp_path / "a.py")).diagnostics
    assert [(d.span.line, d.code) for d in found] == [(7, "DEV202")] and "line 17" in found[0].message


# ---- torch_geometric datasets: graphs built on the cpu, fields where the graph is
def test_graph_dataset_item_not_moved_inside_a_trainer_split_into_files(tmp_path):
    _project(tmp_path, {"models/gcn.py": """
        import torch
        import torch.nn.functional as F


        class GCN(torch.nn.Module):
            def __init__(self, n_in, n_out):
                super().__init__()
                self.lin = torch.nn.Linear(n_in, n_out)

            def forward(self, x, edge_index):
                return F.log_softmax(self.lin(x), dim=1)
        """, "train.py": """
        import torch
        import torch.nn.functional as F
        from torch_geometric.datasets import Planetoid
        from models.gcn import GCN


        class Trainer:
            def __init__(self, dataset):
                self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
                self.data = dataset[0]
                self.model = GCN(dataset.num_features, dataset.num_classes).to(self.device)

            def step(self):
                out = self.model(self.data.x, self.data.edge_index)
                return F.nll_loss(out, self.data.y)


        Trainer(Planetoid(root="/tmp/Cora", name="Cora")).step()
        """})
    assert [c for _, c in _codes(tmp_path, "train.py")] == ["DEV202"]


def test_graph_dataset_item_moved_or_unknown_dataset_is_silent(tmp_path):
    _project(tmp_path, {"moved.py": """
        import torch
        import torch.nn.functional as F
        from torch_geometric.datasets import TUDataset

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        dataset = TUDataset("/tmp/ENZYMES", name="ENZYMES")
        data = dataset[0]
        data = data.to(device)
        lin = torch.nn.Linear(3, 6).to(device)
        loss = F.cross_entropy(lin(data.x), data.y)
        """, "in_place.py": """
        import torch
        from torch_geometric.datasets import Planetoid

        data = Planetoid("/tmp/Cora", "Cora")[0]
        data.to("cuda")
        lin = torch.nn.Linear(3, 6).cuda()
        out = lin(data.x)
        mask_sum = data.train_mask.sum()
        """, "own_dataset.py": """
        import torch
        from my_graphs import load_graphs

        data = load_graphs()[0]
        lin = torch.nn.Linear(3, 6).cuda()
        out = lin(data.x)
        """})
    for name in ("moved.py", "in_place.py", "own_dataset.py"):
        assert _codes(tmp_path, name) == [], name


def test_cpu_copy_of_a_library_layer_output_meets_the_gpu_labels(tmp_path):
    _project(tmp_path, {"a.py": """
        import torch
        from torch_geometric.nn import SGConv


        def strongest_wrong(logits, node):
            return logits[node].clone().argmax().view(-1)


        device = torch.device("cuda")
        conv = SGConv(16, 4, K=2).to(device)
        x = torch.randn(10, 16, device=device)
        edge_index = torch.randint(0, 10, (2, 30), device=device)
        labels = torch.randint(0, 4, (10,), device=device)
        logits = conv(x, edge_index).cpu()
        wrong = strongest_wrong(logits, 3)
        attackers = torch.where(labels == wrong)[0]
        ok = torch.where(labels == logits[3].argmax())[0]
        """})
    assert [c for _, c in _codes(tmp_path, "a.py")] == ["DEV202"]


def test_graph_dataset_transform_that_moves_or_is_unknown_makes_the_item_unknown(tmp_path):
    # pyg's own examples: `transform=T.Compose([..., T.ToDevice(device), ...])` hands out graphs already moved
    _project(tmp_path, {"to_device.py": """
        import torch
        import torch_geometric.transforms as T
        from torch_geometric.datasets import Planetoid

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        transform = T.Compose([T.NormalizeFeatures(), T.ToDevice(device)])
        data = Planetoid("/tmp/Cora", "Cora", transform=transform)[0]
        lin = torch.nn.Linear(1433, 7).to(device)
        out = lin(data.x)
        """, "own_transform.py": """
        import torch
        from torch_geometric.datasets import Planetoid
        from my_transforms import to_gpu

        data = Planetoid("/tmp/Cora", "Cora", transform=to_gpu)[0]
        lin = torch.nn.Linear(1433, 7).cuda()
        out = lin(data.x)
        """, "normalize_only.py": """
        import torch
        import torch_geometric.transforms as T
        from torch_geometric.datasets import Planetoid

        data = Planetoid("/tmp/Cora", "Cora", transform=T.Compose([T.NormalizeFeatures()]))[0]
        lin = torch.nn.Linear(1433, 7).cuda()
        out = lin(data.x)
        """})
    assert _codes(tmp_path, "to_device.py") == []
    assert _codes(tmp_path, "own_transform.py") == []
    assert [c for _, c in _codes(tmp_path, "normalize_only.py")] == ["DEV202"]


# ---- a cpu branch chosen by sizes only
FEATURES = """
import torch


def dev():
    return "cuda" if torch.cuda.is_available() else "cpu"


def pair_features(msa):
    return torch.einsum("ikl,jkl->ij", msa, msa)
"""


def test_cpu_branch_chosen_by_a_size_split_into_files_and_renamed(tmp_path):
    _project(tmp_path, {"feats.py": FEATURES, "prep.py": """
        import torch
        from feats import dev, pair_features


        def prepare(tokens):
            onehot = torch.nn.functional.one_hot(tokens, 21).float().to(dev())
            depth, width = tokens.shape
            pairs = pair_features(onehot) if depth > 1 else torch.zeros((depth, depth))
            return torch.cat((onehot.sum(-1), pairs), dim=-1)


        def prepare_len(seqs):
            x = torch.randn(len(seqs), 8).to(dev())
            extra = x.t() @ x if len(seqs) >= 2 else torch.zeros(8, 8)
            return x @ extra
        """})
    assert [(line, c) for line, c in _codes(tmp_path, "prep.py")] == [(8, "DEV201"), (14, "DEV201")]


def test_cpu_branch_chosen_by_a_flag_or_a_parameter_is_silent(tmp_path):
    _project(tmp_path, {"feats.py": FEATURES, "prep.py": """
        import torch
        from feats import dev, pair_features


        def by_flag(tokens, use_gpu):
            onehot = torch.nn.functional.one_hot(tokens, 21).float().to(dev())
            pairs = pair_features(onehot) if use_gpu else torch.zeros((4, 4))
            return torch.cat((onehot.sum(-1), pairs), dim=-1)


        def by_parameter(tokens, depth):
            onehot = torch.nn.functional.one_hot(tokens, 21).float().to(dev())
            pairs = pair_features(onehot) if depth > 1 else torch.zeros((4, 4))
            return torch.cat((onehot.sum(-1), pairs), dim=-1)


        def by_cuda(tokens):
            onehot = torch.nn.functional.one_hot(tokens, 21).float().to(dev())
            pairs = pair_features(onehot) if torch.cuda.is_available() else torch.zeros((4, 4))
            return torch.cat((onehot.sum(-1), pairs), dim=-1)


        def moved(tokens):
            onehot = torch.nn.functional.one_hot(tokens, 21).float().to(dev())
            depth = tokens.shape[0]
            pairs = pair_features(onehot) if depth > 1 else torch.zeros((4, 4)).to(dev())
            return torch.cat((onehot.sum(-1), pairs), dim=-1)
        """})
    assert _codes(tmp_path, "prep.py") == []


def test_cpu_branch_chosen_by_a_size_passed_one_helper_deeper_and_in_a_class(tmp_path):
    # the caller unpacks the shape (`.shape` or `.size()`) and hands the size down: a parameter bound to
    # a Python number is a size too
    _project(tmp_path, {"feats.py": FEATURES, "prep.py": """
        import torch
        from feats import dev, pair_features


        def pairs_or_zeros(onehot, rows, cols):
            return pair_features(onehot) if rows > 1 else torch.zeros((cols, cols))


        class Featurizer:
            def features(self, tokens):
                onehot = torch.nn.functional.one_hot(tokens, 21).float().to(dev())
                rows, cols = tokens.size()
                pairs = pairs_or_zeros(onehot, rows, cols)
                return torch.cat((onehot.sum(-1), pairs), dim=-1)


        def run(tokens):
            return Featurizer().features(tokens)


        run(torch.randint(0, 21, (1, 9)))
        """})
    assert [(line, c) for line, c in _codes(tmp_path, "prep.py")] == [(13, "DEV202")]  # where the cpu value comes from


def test_size_parameter_from_an_unknown_caller_value_is_silent(tmp_path):
    _project(tmp_path, {"feats.py": FEATURES, "prep.py": """
        import sys
        import torch
        from feats import dev, pair_features


        def pairs_or_zeros(onehot, rows):
            return pair_features(onehot) if rows > 1 else torch.zeros((4, 4))


        def features(tokens, rows):
            onehot = torch.nn.functional.one_hot(tokens, 21).float().to(dev())
            return torch.cat((onehot.sum(-1), pairs_or_zeros(onehot, rows)), dim=-1)


        features(torch.randint(0, 21, (1, 9)), int(sys.argv[1]))
        """})
    assert _codes(tmp_path, "prep.py") == []
