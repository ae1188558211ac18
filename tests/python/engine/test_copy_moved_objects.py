"""Library objects whose `.to(device)` returns a moved copy (knowledge: `library_factories` kind
`moved_by_copy`, from an ast scan of the DGL release: `DGLGraph.to` returns `copy.copy(self)` moved, and
the functions that build graphs, `dgl.graph`, `dgl.batch`, `dgl.from_scipy` ...).

A graph is built where its data is (host data: the cpu; tensors: their device) unless `device=` says
otherwise, and `g.to(device)` as a statement leaves `g` where it was, as a tensor's `.to()` does and unlike
`nn.Module.to()`: DEV107 where the result is dropped. Variations: a DataLoader whose collate_fn batches the
graphs (in another file; its samples transposed by `map(list, zip(*samples))`), a trainer class keeping the graph on `self`, a helper one call deeper.

Silent neighbours: the moved copy bound (`g = g.to(device)`), a graph built on the device (`device=`), a
graph of unknown origin, a torch_geometric graph (its `.to()` moves it in place)."""

from __future__ import annotations

from project_fixtures import codes as _codes, write_project as _project


SINGLE = """
    import dgl
    import torch
    import torch.nn as nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)

        def forward(self, g, x):
            return self.fc(x) * g.in_degrees().float().unsqueeze(1)  # the graph meets the features


    def main():
        device = torch.device("cuda")
        src = torch.tensor([0, 1, 2])
        dst = torch.tensor([1, 2, 0])
        g = dgl.graph((src, dst){build})
        model = Net().to(device)
        x = torch.randn(3, 4).to(device)
        {move}
        return model(g, x)


    if __name__ == "__main__":
        main()
"""


def test_a_graph_moved_and_dropped(tmp_path):
    _project(tmp_path, {"train.py": SINGLE.format(build="", move="g.to(device)")})
    # the cpu graph reaches the cuda model too (DEV202 at the graph's cause)
    assert _codes(tmp_path, "train.py") == [(19, "DEV202"), (22, "DEV107")]


def test_the_moved_copy_bound_is_silent(tmp_path):
    _project(tmp_path, {"train.py": SINGLE.format(build="", move="g = g.to(device)")})
    assert _codes(tmp_path, "train.py") == []


def test_a_graph_of_unknown_data_is_silent(tmp_path):
    src = SINGLE.format(build="", move="g.to(device)").replace("src = torch.tensor([0, 1, 2])", "src = load_src()")
    _project(tmp_path, {"train.py": src})
    assert _codes(tmp_path, "train.py") == []


DATA = """
    import dgl
    import numpy as np
    import torch
    from torch.utils.data import Dataset


    class GraphSet(Dataset):
        def __init__(self, n=64):
            self.n = n

        def make_graph(self):
            edges = np.random.randint(0, 10, size=(2, 30))
            g = dgl.graph((edges[0], edges[1]), num_nodes=10)
            return g

        def __getitem__(self, index):
            return self.make_graph(), index

        def __len__(self):
            return self.n


    def collate(samples):
        graphs = [s[0] for s in samples]
        labels = [s[1] for s in samples]
        return dgl.batch(graphs), torch.tensor(labels)
"""

TRAINER = """
    import torch
    from torch.utils.data import DataLoader

    from data import GraphSet, collate


    class Trainer:
        def __init__(self, model, device):
            self.device = device
            self.model = model.to(device)
            self.loader = DataLoader(GraphSet(), batch_size=8, collate_fn=collate)

        def fit(self):
            for graph, labels in self.loader:
                {move}
                labels = labels.to(self.device)
                self.step(graph, labels)

        def step(self, graph, labels):
            return graph, labels


    def main():
        trainer = Trainer(torch.nn.Linear(4, 2), torch.device("cuda"))
        trainer.fit()


    if __name__ == "__main__":
        main()
"""


def test_a_collated_graph_batch_moved_and_dropped_in_a_trainer(tmp_path):
    _project(tmp_path, {"data.py": DATA, "train.py": TRAINER.format(move="graph.to(self.device)")})
    assert _codes(tmp_path, "train.py") == [(15, "DEV107")]


def test_samples_transposed_by_zip_in_the_collate_fn(tmp_path):
    data = DATA.replace("""        graphs = [s[0] for s in samples]
        labels = [s[1] for s in samples]
""", """        graphs, labels = map(list, zip(*samples))
""")
    _project(tmp_path, {"data.py": data, "train.py": TRAINER.format(move="graph.to(self.device)")})
    assert _codes(tmp_path, "train.py") == [(15, "DEV107")]


def test_a_collated_graph_batch_rebound_is_silent(tmp_path):
    _project(tmp_path, {"data.py": DATA, "train.py": TRAINER.format(move="graph = graph.to(self.device)")})
    assert _codes(tmp_path, "train.py") == []


ENV = """
    import dgl
    import torch


    def build_graph(n):
        return dgl.rand_graph(n, 3 * n)


    class Env:
        def __init__(self, device):
            self.device = device

        def register(self, n):
            self.g = build_graph(n)
            {move}
            self.x = torch.zeros(n, device=self.device)


    def main():
        env = Env(torch.device("cuda:0"))
        env.register(10)


    if __name__ == "__main__":
        main()
"""


def test_a_graph_kept_on_self_moved_and_dropped_one_helper_deeper(tmp_path):
    _project(tmp_path, {"env.py": ENV.format(move="self.g.to(self.device)")})
    assert _codes(tmp_path, "env.py") == [(15, "DEV107")]


def test_a_graph_kept_on_self_rebound_is_silent(tmp_path):
    _project(tmp_path, {"env.py": ENV.format(move="self.g = self.g.to(self.device)")})
    assert _codes(tmp_path, "env.py") == []


def test_a_graph_built_on_the_device_is_silent(tmp_path):
    _project(tmp_path, {"train.py": SINGLE.format(build=", device=device", move="x = x * 2")})
    assert _codes(tmp_path, "train.py") == []


def test_a_graph_built_on_the_cpu_reaches_the_moved_model(tmp_path):
    _project(tmp_path, {"train.py": SINGLE.format(build=", device=\"cpu\"", move="x = x * 2")})
    assert _codes(tmp_path, "train.py") == [(19, "DEV202")]


def test_a_torch_geometric_graph_moves_in_place(tmp_path):
    _project(tmp_path, {"train.py": """
        import torch
        from torch_geometric.datasets import Planetoid


        def main():
            device = torch.device("cuda")
            data = Planetoid(root="/tmp/cora", name="Cora")[0]
            data.to(device)
            return data.x.sum()


        if __name__ == "__main__":
            main()
    """})
    assert _codes(tmp_path, "train.py") == []
