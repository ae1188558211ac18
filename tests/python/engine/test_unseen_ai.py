"""Semantics found missing on unseen real cases, batch ai (tests/fixtures/engine/unseen/ai_*): scientific,
graph and RL code.

1. `isinstance(x, dict)` of a dict the code built (a literal, `dict(...)`) is decided, as it already was for
   lists and tuples: a config-driven factory `def get_qnet(qnet): if isinstance(qnet, dict): return
   REGISTRY[qnet["name"]](**qnet["kwargs"])` / `return qnet` called with a config dict returns the module it
   builds, not a join of that module with the dict (ai_rlhive_dqn_qnet_not_moved: the DQN agent moves its
   observations to its device, never the Q-network built from the config). A dict subclass or a value of
   unknown kind stays undecided."""

from __future__ import annotations

import textwrap

from devflow.api import check_path, check_source


def _codes(src: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics]


def _project(root, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


NETS = """
    import torch
    from torch import nn


    class MLP(nn.Module):
        def __init__(self, in_dim=4, out_dim=2):
            super().__init__()
            self.fc = nn.Linear(in_dim, out_dim)

        def forward(self, x):
            return self.fc(x)


    REGISTRY = {"mlp": MLP}


    def build_net(spec):
        if isinstance(spec, dict):
            return REGISTRY[spec["name"]](**spec.get("kwargs", {}))
        return spec
    """


def test_config_factory_model_not_moved():
    src = NETS + """
    device = torch.device("cuda")
    net = build_net({"name": "mlp", "kwargs": {"in_dim": 4}})
    y = net(torch.rand(3, 4).to(device))
    """
    assert _codes(src) == [(25, "DEV106")]


def test_config_factory_model_moved_is_silent():
    src = NETS + """
    device = torch.device("cuda")
    net = build_net({"name": "mlp"}).to(device)
    y = net(torch.rand(3, 4).to(device))
    """
    assert _codes(src) == []


def test_factory_given_a_module_of_unknown_device_is_silent():
    src = NETS + """
    def run(net_or_spec):
        device = torch.device("cuda")
        net = build_net(net_or_spec)
        return net(torch.rand(3, 4).to(device))
    """
    assert _codes(src) == []


def test_dict_subclass_stays_undecided():
    src = """
    import torch
    from collections import OrderedDict
    from torch import nn


    def build(spec):
        if isinstance(spec, OrderedDict):
            return nn.Linear(4, 2)
        return spec


    device = torch.device("cuda")
    net = build({"name": "mlp"})
    y = net(torch.rand(3, 4).to(device))
    """
    assert _codes(src) == []


def test_agent_class_split_into_files(tmp_path):
    _project(tmp_path, {
        "rl/__init__.py": "",
        "rl/nets.py": NETS,
        "rl/agent.py": """
            import torch
            from rl.nets import build_net


            class Agent:
                def __init__(self, qnet, obs_dim, device="cuda"):
                    if isinstance(qnet, dict):
                        qnet["kwargs"] = {"in_dim": obs_dim}
                    self.device = torch.device(device)
                    self.q = self._make(qnet)

                def _make(self, qnet):
                    return build_net(qnet)

                def act(self, obs):
                    obs = torch.as_tensor(obs).float().to(self.device)
                    return self.q(obs).argmax()
            """,
        "main.py": """
            from rl.agent import Agent

            if __name__ == "__main__":
                agent = Agent({"name": "mlp"}, obs_dim=4)
                agent.act([[0.0, 1.0, 2.0, 3.0]])
            """,
    })
    assert [(d.span.line, d.code) for d in check_path(str(tmp_path / "rl/agent.py")).diagnostics] == [(18, "DEV106")]


# 2. `obj[key] = v` on an instance of a project class runs the class's `__setitem__(key, v)`: a graph `Data`
#    container whose `to(device)` stores each moved tensor back with `self[key] = item.to(device)`
#    (`__setitem__` doing `setattr(self, key, value)`) holds the moved tensors afterwards
#    (ai_pyg_sample_points_rand: a mesh moved to the GPU meets the transform's cpu `torch.rand`).

DATA = """
    class Data(object):
        def __init__(self, pos=None, face=None):
            self.pos = pos
            self.face = face

        def __getitem__(self, key):
            return getattr(self, key, None)

        def __setitem__(self, key, value):
            setattr(self, key, value)

        def to(self, device):
            for key in ('pos', 'face'):
                item = self[key]
                if item is not None:
                    self[key] = item.to(device)
            return self
    """

TRANSFORM = """
    import torch


    class Jitter(object):
        def __init__(self, num):
            self.num = num

        def __call__(self, data):
            pos = data.pos
            noise = torch.rand(self.num, 3{dev})
            data.pos = pos[:self.num] + noise
            return data
    """


def _mesh_project(root, dev: str = "", where: str = "torch.device('cuda')") -> None:
    _project(root, {
        "graphs/__init__.py": "",
        "graphs/data.py": DATA,
        "graphs/transforms.py": TRANSFORM.replace("{dev}", dev),
        "run.py": f"""
            import torch
            from graphs.data import Data
            from graphs.transforms import Jitter


            def main(device):
                mesh = Data(torch.rand(8, 3), torch.zeros(3, 4, dtype=torch.long)).to(device)
                return Jitter(4)(mesh)


            if __name__ == '__main__':
                main({where})
            """,
    })


def test_setitem_moves_into_the_container(tmp_path):
    _mesh_project(tmp_path)
    assert [(d.span.line, d.code) for d in check_path(str(tmp_path / "graphs/transforms.py")).diagnostics] == [(11, "DEV201")]


def test_setitem_container_fixed_transform_is_silent(tmp_path):
    _mesh_project(tmp_path, dev=", device=pos.device")
    assert check_path(str(tmp_path / "graphs/transforms.py")).diagnostics == []
    assert check_path(str(tmp_path / "run.py")).diagnostics == []


def test_setitem_container_unknown_device_is_silent(tmp_path):
    _mesh_project(tmp_path, where="input()")
    assert check_path(str(tmp_path / "graphs/transforms.py")).diagnostics == []


def test_setitem_in_one_file_renamed():
    src = DATA.replace("Data", "Graph") + """
    import torch

    g = Graph(torch.rand(8, 3), torch.zeros(3, 4)).to(torch.device('cuda'))
    y = g.pos + torch.ones(8, 3)
    """
    assert _codes(src) == [(23, "DEV201")]
