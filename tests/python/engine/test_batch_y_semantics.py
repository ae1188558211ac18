"""Semantics found missing by the unseen batch Y (tests/fixtures/engine/unseen/y_*), each tested on the
variations a user writes (renamed, split into files, one helper deeper, inside a trainer class) and on
the neighbours that must stay silent:
- two tests of the same flag (`if use_cuda:` ... `if use_cuda: ... else: ...`): on the second test's false
  branch (its `else:`, or the body of `if not use_cuda:`) what the first test moved is where it was before
  (a tensor name on the cpu, an attribute its earlier value), since that branch runs only where the flag
  is false (and so is what follows `if flag: return ...` in its block); a bare name is one function's flag, an attribute chain (`self.use_cuda`, `args.cuda`) is one
  flag across methods;
- `isinstance(x, np.ndarray)` of a tensor on an accelerator is False (`isinstance(x, torch.Tensor)` True): the
  branch converting a numpy array (`torch.from_numpy`, cpu) is not joined with the cuda tensor into an
  unknown; a tensor on the cpu or of unknown device leaves the test undecided."""

from __future__ import annotations

from project_fixtures import codes as _codes, write_project as _project


# ---- the false branch of a flag's second test: nothing the first test moved is moved there
def test_else_branch_of_same_flag_sees_the_bank_on_cpu_silent(tmp_path):
    _project(tmp_path, {"store.py": """
        import torch


        def store(feats, index, n, use_cuda):
            features = torch.zeros(n, feats.shape[-1])
            if use_cuda:
                features = features.cuda()
            if use_cuda:
                features.index_copy_(0, index.cuda(), feats.cuda())
            else:
                features.index_copy_(0, index.cpu(), feats.cpu())
            return features
        """})
    assert _codes(tmp_path, "store.py") == []


def test_negated_flag_body_is_the_false_branch_silent(tmp_path):
    _project(tmp_path, {"store.py": """
        import torch


        def store(feats, index, n, keep_on_gpu=True):
            bank = torch.zeros(n, feats.shape[-1])
            if keep_on_gpu:
                bank = bank.cuda()
            if not keep_on_gpu:
                bank.index_copy_(0, index.cpu(), feats.cpu())
            return bank
        """})
    assert _codes(tmp_path, "store.py") == []


def test_attribute_moved_under_the_flag_in_a_trainer_class_silent(tmp_path):
    _project(tmp_path, {"bank/memory.py": """
        import torch


        class MemoryBank:
            def __init__(self, size, dim, on_gpu):
                self.on_gpu = on_gpu
                self.bank = torch.zeros(size, dim)
                if self.on_gpu:
                    self.bank = self.bank.cuda()

            def write(self, index, feats):
                self.update(index, feats)

            def update(self, index, feats):
                if self.on_gpu:
                    self.bank.index_copy_(0, index.cuda(), feats.cuda())
                else:
                    self.bank.index_copy_(0, index.cpu(), feats.detach().cpu())
        """, "train.py": """
        import torch
        from bank.memory import MemoryBank

        bank = MemoryBank(100, 8, on_gpu=False)
        bank.write(torch.arange(4), torch.randn(4, 8, device="cuda"))
        """})
    assert _codes(tmp_path, "bank/memory.py") == []
    assert _codes(tmp_path, "train.py") == []


def test_else_branch_mixing_a_flag_moved_bank_with_an_always_cuda_query_is_reported(tmp_path):
    # on the flag's false branch the bank stayed on the cpu, the query is on cuda whatever the flag
    _project(tmp_path, {"retrieve.py": """
        import sys
        import torch


        def retrieve(bank, images, encoder, use_cuda):
            if use_cuda:
                bank = bank.cuda()
            query = encoder(images.cuda())
            if use_cuda:
                return torch.mm(query, bank.t())
            else:
                return torch.mm(query, bank.t())


        encoder = torch.nn.Linear(16, 8).cuda()
        print(retrieve(torch.randn(100, 8), torch.randn(4, 16), encoder, "--cuda" in sys.argv))
        """})
    assert _codes(tmp_path, "retrieve.py") == [(16, "DEV201")]


def test_a_local_flag_of_another_function_is_another_flag(tmp_path):
    # `use_cuda` of `fill` says nothing about `use_cuda` of `read`: the bank moved in `fill` is not narrowed
    _project(tmp_path, {"bank.py": """
        import torch


        def fill(n, use_cuda):
            bank = torch.zeros(n, 4)
            if use_cuda:
                bank = bank.cuda()
            return bank


        def read(bank, use_cuda):
            if use_cuda:
                return bank.sum()
            else:
                return bank.sum() + torch.ones(4).sum()


        read(fill(8, True), True)
        """})
    assert _codes(tmp_path, "bank.py") == []


# ---- isinstance of a tensor on an accelerator against numpy.ndarray / torch.Tensor is decided
COLLATE = """
import numpy as np
import torch


def batch_coords(coords):
    out = []
    for i, coord in enumerate(coords):
        if isinstance(coord, np.ndarray):
            coord = torch.from_numpy(coord)
        else:
            assert isinstance(coord, torch.Tensor)
        column = torch.ones((coord.shape[0], 1)).int() * i
        out.append(torch.cat((coord.int(), column), 1))
    return torch.cat(out, 0)
"""


def test_numpy_branch_of_a_collate_helper_split_into_files_reported(tmp_path):
    _project(tmp_path, {"data/collate.py": COLLATE, "data/__init__.py": "", "train.py": """
        import torch
        from data.collate import batch_coords


        class Voxelizer:
            def __init__(self, device="cuda"):
                self.device = device

            def __call__(self, points):
                return torch.floor(points.to(self.device)[:, :3] / 0.05)


        voxelize = Voxelizer()
        clouds = [voxelize(torch.rand(100, 6)) for _ in range(2)]
        print(batch_coords(clouds).shape)
        """})
    assert _codes(tmp_path, "data/collate.py") == [(12, "DEV201")]


def test_numpy_branch_with_cpu_or_unknown_coordinates_silent(tmp_path):
    _project(tmp_path, {"data/collate.py": COLLATE, "data/__init__.py": "", "train.py": """
        import numpy as np
        import torch
        from data.collate import batch_coords


        def main(clouds):
            return batch_coords([c[:, :3] for c in clouds])


        print(batch_coords([np.random.rand(100, 3), torch.rand(50, 3)]).shape)
        """})
    assert _codes(tmp_path, "data/collate.py") == []
    assert _codes(tmp_path, "train.py") == []


def test_flag_moved_in_the_else_of_a_negated_test_then_narrowed_silent(tmp_path):
    _project(tmp_path, {"store.py": """
        import torch


        class Store:
            def __init__(self, n, dim, cpu_only):
                self.cpu_only = cpu_only
                self.bank = torch.zeros(n, dim)
                if not self.cpu_only:
                    self.bank = self.bank.cuda()

            def put(self, index, feats):
                if self.cpu_only:
                    self.bank.index_copy_(0, index.cpu(), feats.cpu())
                else:
                    self.bank.index_copy_(0, index.cuda(), feats.cuda())


        def fill(n, feats, index, cpu_only):
            bank = torch.zeros(n, 4)
            if not cpu_only:
                pass
            else:
                bank = bank.cuda()  # (moved where `cpu_only` is true: the else of `if not cpu_only`)
            if cpu_only:
                bank.index_copy_(0, index.cuda(), feats.cuda())
            return bank
        """})
    assert _codes(tmp_path, "store.py") == []


def test_config_flag_across_methods_split_into_files_fall_through_silent_else_reported(tmp_path):
    _project(tmp_path, {"cfg.py": """
        class Config:
            def __init__(self, use_gpu=True):
                self.use_gpu = use_gpu
        """, "retrieval/bank.py": """
        import torch


        class EmbeddingBank:
            def __init__(self, cfg, size=64, dim=8):
                self.cfg = cfg
                self.feats = torch.zeros(size, dim)
                if self.cfg.use_gpu:
                    self.feats = self.feats.cuda()

            def search(self, query):
                if self.cfg.use_gpu:
                    return torch.mm(query.cuda(), self.feats.t()).topk(5)
                return torch.mm(query.cpu(), self.feats.t()).topk(5)

            def search_wrong(self, query):
                if self.cfg.use_gpu:
                    return torch.mm(query.cuda(), self.feats.t()).topk(5)
                else:
                    return torch.mm(query.cuda(), self.feats.t()).topk(5)
        """, "main.py": """
        import sys
        import torch
        from cfg import Config
        from retrieval.bank import EmbeddingBank

        bank = EmbeddingBank(Config(use_gpu="--gpu" in sys.argv))
        print(bank.search(torch.randn(2, 8)))
        print(bank.search_wrong(torch.randn(2, 8)))
        """})
    # `search`: after `if self.cfg.use_gpu: return ...` the bank is on the cpu with the query; `search_wrong`:
    # its else branch sends a cuda query against the bank that stayed on the cpu (reported where it is made)
    assert _codes(tmp_path, "main.py") == [(8, "DEV201")]
