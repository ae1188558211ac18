"""Semantics found missing on unseen real cases, batch ab (tests/fixtures/engine/unseen/ab_*): tensors
created inside models and losses without a device.

1. Bases in the order they are written. `class BaseNNClusterer(BaseNNModel, BaseClusterer)` with
   `BaseNNModel` imported and `BaseClusterer` defined beside it: Python looks up `super().__init__` (and
   every attribute) left to right, so `super().__init__(lr, epochs, device)` runs `BaseNNModel.__init__`,
   whatever file each base comes from. The engine linked same-file bases first and ran
   `BaseClusterer.__init__(device=lr)`, losing `self.device` (ab_pypots_vader_log2pi: the VaDER wrapper
   moves its module to `self.device` set by a base class two levels up).
2. A call's result depends on the state it reads, not only on its arguments. A method run once, then run
   again after an attribute store changed where some state lives (`gmm_layer.set_values(mu.cuda(), ...)`
   replacing a cpu tensor attribute between two forwards), must see the new state: the memo of calls
   now holds only until such a store (the pretraining forward of ab_pypots_vader_log2pi had been
   replayed for the training forward, with the GMM weights still on the cpu: a false alarm)."""

from __future__ import annotations

import textwrap

from devflow.api import check_path, check_source


def _codes(src: str, head: str = "") -> list[tuple[int, str]]:
    text = textwrap.dedent(head) + textwrap.dedent(src)
    return [(d.span.line, d.code) for d in check_source(text, "t.py").diagnostics]


def _project(root, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def _file_codes(root, rel: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_path(str(root / rel)).diagnostics]


BASE = """
    import torch


    class BaseModel:
        def __init__(self, device):
            if device is None:
                self.device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
            else:
                self.device = device


    class BaseNNModel(BaseModel):
        def __init__(self, learning_rate, epochs, device):
            super().__init__(device)
            self.lr = learning_rate
            self.epochs = epochs
    """

CLUSTERING = """
    import torch
    import torch.nn as nn

    from base import BaseModel, BaseNNModel


    class BaseClusterer(BaseModel):
        def __init__(self, device):
            super().__init__(device)


    class BaseNNClusterer({bases}):
        def __init__(self, n_clusters, learning_rate, epochs, device):
            super().__init__(learning_rate, epochs, device)
            self.n_clusters = n_clusters


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.mu = nn.Parameter(torch.randn(3, 5))

        def forward(self, ii):
            lsc = self.mu.index_select(0, ii)
            log_2pi = torch.log(torch.FloatTensor([6.283]))
            return lsc + log_2pi


    class VaDER(BaseNNClusterer):
        def __init__(self, n_clusters, device=None):
            super().__init__(n_clusters, 1e-3, 10, device)
            self.model = Net()
            self.model = self.model.to(self.device)

        def fit(self, loader):
            for ii in loader:
                self.model.forward(ii)
    """

RUN = """
    import torch
    from clustering import VaDER

    vader = VaDER(3, device={device})
    vader.fit(loader)
    """


def test_imported_base_written_first_runs_first(tmp_path):
    _project(tmp_path, {"base.py": BASE, "clustering.py": CLUSTERING.format(bases="BaseNNModel, BaseClusterer"),
                        "run.py": RUN.format(device='torch.device("cuda")')})
    assert _file_codes(tmp_path, "clustering.py") == [(26, "DEV201")]


def test_device_chosen_by_the_base_when_none_is_given(tmp_path):
    _project(tmp_path, {"base.py": BASE, "clustering.py": CLUSTERING.format(bases="BaseNNModel, BaseClusterer"),
                        "run.py": RUN.format(device="None")})
    assert _file_codes(tmp_path, "clustering.py") == [(26, "DEV201")]


def test_single_imported_base_unchanged(tmp_path):
    _project(tmp_path, {"base.py": BASE, "clustering.py": CLUSTERING.format(bases="BaseNNModel"),
                        "run.py": RUN.format(device='torch.device("cuda")')})
    assert _file_codes(tmp_path, "clustering.py") == [(26, "DEV201")]


def test_same_file_base_written_first_keeps_its_place(tmp_path):
    # `class C(Local, Imported)`: the same-file base is first, as written; its __init__ takes the call
    bases = """
        import torch.nn as nn

        from imported import Imported


        class Local:
            def __init__(self, device):
                self.device = device


        class Model(Local, Imported):
            def __init__(self, device):
                super().__init__(device)
                self.net = nn.Linear(4, 4).to(self.device)
                self.scale = None

            def run(self, x):
                return self.net(x)
        """
    imported = """
        import torch


        class Imported:
            def __init__(self, device):
                self.device = torch.device("cpu")
        """
    run = """
        import torch
        from model import Model

        m = Model(torch.device("cuda"))
        m.run(torch.randn(2, 4))
        """
    _project(tmp_path, {"model.py": bases, "imported.py": imported, "run.py": run})
    assert _file_codes(tmp_path, "run.py") == [(6, "DEV201")]


def test_unknown_device_from_the_first_base_stays_silent(tmp_path):
    # the first base (imported) takes its device from a config object the engine does not know
    base = """
        class BaseModel:
            def __init__(self, cfg):
                self.device = cfg.device
        """
    clustering = """
        import torch
        import torch.nn as nn

        from base import BaseModel


        class Local:
            def __init__(self, cfg):
                self.device = torch.device("cuda")


        class Wrapper(BaseModel, Local):
            def __init__(self, cfg):
                super().__init__(cfg)
                self.model = nn.Linear(4, 4).to(self.device)

            def step(self):
                return self.model(torch.FloatTensor(2, 4))
        """
    run = """
        from clustering import Wrapper

        Wrapper(config).step()
        """
    _project(tmp_path, {"base.py": base, "clustering.py": clustering, "run.py": run})
    assert _file_codes(tmp_path, "clustering.py") == []


# ---- 2. a memoised call sees state stored after it ran

GMM = """
    import torch
    import torch.nn as nn
    import torch.nn.functional as F


    class GMMLayer(nn.Module):
        def __init__(self, d_hidden, n_clusters):
            super().__init__()
            self.mu_c_unscaled = nn.Parameter(torch.Tensor(n_clusters, d_hidden))
            self.phi_c_unscaled = torch.Tensor(n_clusters)

        def set_values(self, mu, phi):
            self.mu_c_unscaled = torch.nn.Parameter(mu)
            self.phi_c_unscaled = torch.tensor(phi)

        def forward(self):
            return self.mu_c_unscaled, torch.softmax(self.phi_c_unscaled, dim=0)


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.gmm_layer = GMMLayer(5, 3)

        def get_results(self, z):
            mu_c, phi_c = self.gmm_layer()
            return z * 2, mu_c, phi_c

        def forward(self, z, pretrain=False):
            z, mu_c, phi_c = self.get_results(z)
            if pretrain:
                return z.sum()
            return torch.log(phi_c) + (z[:, None, :] - mu_c).sum(2)
    """


def test_state_set_between_two_forwards_is_seen():
    assert _codes(head=GMM, src="""
        model = Model().to("cuda")
        for z in loader:
            model(z.cuda(), pretrain=True)
        model.gmm_layer.set_values(torch.randn(3, 5).cuda(), torch.randn(3).cuda())
        for z in loader:
            model(z.cuda())
        """) == []


def test_state_left_on_the_cpu_between_two_forwards_is_found():
    assert _codes(head=GMM, src="""
        model = Model().to("cuda")
        for z in loader:
            model(z.cuda(), pretrain=True)
        model.gmm_layer.set_values(torch.randn(3, 5).cuda(), torch.randn(3))
        for z in loader:
            model(z.cuda())
        """) == [(31, "DEV202")]


def test_state_set_by_a_trainer_method_one_call_deeper():
    assert _codes(head=GMM, src="""
        class Trainer:
            def __init__(self):
                self.device = torch.device("cuda")
                self.model = Model().to(self.device)

            def _init_gmm(self, mu, phi):
                self.model.gmm_layer.set_values(mu.to(self.device), phi.to(self.device))

            def fit(self, loader):
                for z in loader:
                    self.model(z.to(self.device), pretrain=True)
                self._init_gmm(torch.randn(3, 5), torch.randn(3))
                for z in loader:
                    self.model(z.to(self.device))

        Trainer().fit(loader)
        """) == []


def test_a_fresh_list_per_call_keeps_the_memo():
    # `self.cache = []` in a method changes no placement: the second identical call is the first's
    assert _codes("""
        import torch
        import torch.nn as nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)
                self.outs = []

            def forward(self, x):
                self.outs = []
                y = self.fc(x)
                self.outs.append(y)
                return y + torch.zeros(2, 4)

        net = Net().to("cuda")
        net(torch.randn(2, 4).cuda())
        net(torch.randn(2, 4).cuda())
        """) == [(15, "DEV201")]
