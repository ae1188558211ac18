"""Semantics found missing on unseen real cases, batch BI (tests/fixtures/engine/unseen/bi_*): language, speech and
retrieval code (embedding helpers, rerankers, serving-style lazy model loaders).

- A value of unknown kind moved with `.to(device)` / `.cuda()` (what `torch.hub.load(...)` returns, an object of an
  unresolved package) is on that device whether it is a tensor or a module. A tensor is not callable: when the moved
  value is then called, `m(x)`, it is an nn.Module whose parameters sit on that device, and a cpu input meets them in
  its forward (lucidrains/RETRO-pytorch#9: the BERT from `torch.hub.load(...)` moved with `.cuda()`, given the cpu
  padding mask as `attention_mask`). Not called, it stays what it was (a moved tensor).
- A function that binds a module-level name with `global name` (a lazy loader: `if MODEL is None: MODEL = load();
  MODEL = MODEL.cuda()`) leaves it, for every other function, at the value it holds when the function returns: a
  later binding of the same run replaces an earlier one (the run's bindings are not joined), and after an `if` the
  run's binding is what either branch left. So a caller that runs after the loader, or an entry point the file
  never calls, sees the moved model, not the join of the loaded and the moved one (unknown)."""

from __future__ import annotations

from project_fixtures import codes as _codes, write_project as _project


# ---- a moved value of unknown kind, then called, is a module on that device ------------------------------------

_HUB = """
    import torch


    def load():
        model = torch.hub.load("pytorch/vision", "resnet18", pretrained=True){move}
        return model


    def predict(images):
        model = load()
        return model(images)


    def main():
        images = torch.zeros(2, 3, 224, 224){images_move}
        return predict(images)
"""


def test_hub_model_moved_then_called_with_cpu_input(tmp_path):
    _project(tmp_path, {"infer.py": _HUB.format(move=".cuda()", images_move="")})
    assert _codes(tmp_path, "infer.py") == [(15, "DEV201")]


def test_hub_model_moved_with_to_device_in_a_trainer_class(tmp_path):
    _project(tmp_path, {"infer.py": """
        import torch


        class Embedder:
            def __init__(self, device):
                self.device = device
                self.net = torch.hub.load("facebookresearch/dino:main", "dino_vits16").to(device)

            def embed(self, batch):
                return self.net(batch)


        def main():
            embedder = Embedder(torch.device("cuda"))
            return embedder.embed(torch.randn(4, 3, 224, 224))
    """})
    assert _codes(tmp_path, "infer.py") == [(15, "DEV201")]


def test_moved_object_of_an_unresolved_package_split_into_files(tmp_path):
    _project(tmp_path, {
        "models.py": """
            import torch
            from somepkg import build_encoder


            def get_encoder(device):
                return build_encoder("base").to(device)
        """,
        "serve.py": """
            import torch
            from models import get_encoder

            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            encoder = get_encoder(device)
            tokens = torch.tensor([[1, 2, 3]])
            out = encoder(tokens)
        """})
    assert _codes(tmp_path, "serve.py") == [(6, "DEV201")]


def test_silent_when_the_input_is_moved_too(tmp_path):
    _project(tmp_path, {"infer.py": _HUB.format(move=".cuda()", images_move=".cuda()")})
    assert _codes(tmp_path, "infer.py") == []


def test_silent_when_the_model_is_not_moved(tmp_path):
    _project(tmp_path, {"infer.py": _HUB.format(move="", images_move="")})
    assert _codes(tmp_path, "infer.py") == []


def test_silent_when_the_device_is_unknown(tmp_path):
    _project(tmp_path, {"infer.py": """
        import torch


        def predict(images, device):
            model = torch.hub.load("pytorch/vision", "resnet18").to(device)
            return model(images)
    """})
    assert _codes(tmp_path, "infer.py") == []


def test_a_moved_value_that_is_not_called_stays_a_tensor(tmp_path):
    _project(tmp_path, {"feats.py": """
        import torch
        from somepkg import load_features


        def main():
            feats = load_features("train").cuda()
            return feats + torch.zeros(3)
    """})
    assert _codes(tmp_path, "feats.py") == [(7, "DEV201")]


# ---- a global bound by a lazy loader holds the loader's last binding ------------------------------------------

_LAZY = """
    import numpy as np
    import torch

    MODEL = None


    def get_model():
        global MODEL
        if MODEL is None:
            MODEL = torch.hub.load("huggingface/pytorch-transformers", "model", "bert-base-cased")
            if torch.cuda.is_available():
                MODEL = MODEL.cuda()
        return MODEL


    def embed(token_ids):
        model = get_model()
        mask = token_ids != 0
        if torch.cuda.is_available():
            token_ids = token_ids.cuda(){mask_move}
        return model(input_ids=token_ids, attention_mask=mask)


    def main():
        ids = torch.from_numpy(np.zeros((2, 8), dtype=np.int64))
        return embed(ids)
"""


def test_lazy_global_loader_seen_from_an_entry_point(tmp_path):
    _project(tmp_path, {"embed.py": _LAZY.format(mask_move="")})
    assert _codes(tmp_path, "embed.py") == [(25, "DEV202")]


def test_lazy_global_loader_of_a_torch_module_in_another_file(tmp_path):
    _project(tmp_path, {
        "loader.py": """
            import torch
            import torch.nn as nn

            _model = None


            def get_model():
                global _model
                if _model is None:
                    _model = nn.Embedding(100, 16)
                    _model = _model.to("cuda")
                return _model
        """,
        "app.py": """
            import torch
            from loader import get_model


            def handler(ids):
                return get_model()(ids)


            def main():
                return handler(torch.tensor([1, 2, 3]))
        """})
    assert _codes(tmp_path, "app.py") == [(10, "DEV201")]


def test_a_lazy_loader_moving_under_a_flag_reads_as_a_local_would(tmp_path):
    # the flag-guarded move is reported as for a local model (the input is not moved under the same flag)
    _project(tmp_path, {"embed.py": """
        import torch
        import torch.nn as nn

        MODEL = None


        def get_model(use_gpu):
            global MODEL
            if MODEL is None:
                MODEL = nn.Embedding(100, 16)
                if use_gpu:
                    MODEL = MODEL.cuda()
            return MODEL


        def main(use_gpu):
            return get_model(use_gpu)(torch.tensor([1, 2, 3]))
    """})
    assert _codes(tmp_path, "embed.py") == [(17, "DEV201")]


def test_silent_when_the_lazy_loader_moves_to_an_unknown_device(tmp_path):
    _project(tmp_path, {"embed.py": """
        import torch
        import torch.nn as nn

        MODEL = None


        def get_model(device):
            global MODEL
            if MODEL is None:
                MODEL = nn.Embedding(100, 16)
                MODEL = MODEL.to(device)
            return MODEL


        def main(device):
            return get_model(device)(torch.tensor([1, 2, 3]))
    """})
    assert _codes(tmp_path, "embed.py") == []


def test_silent_when_the_mask_is_moved_with_the_ids(tmp_path):
    _project(tmp_path, {"embed.py": _LAZY.format(mask_move="\n            mask = mask.cuda()")})
    assert _codes(tmp_path, "embed.py") == []


def test_silent_for_a_data_parallel_wrapper_of_an_unknown_model(tmp_path):
    # DataParallel scatters its inputs to the GPUs itself: cpu inputs are what it expects
    _project(tmp_path, {"train.py": """
        import torch
        from torch.nn.parallel import DataParallel
        from somepkg import build_detector


        def main(cfg):
            model = DataParallel(build_detector(cfg), device_ids=range(2)).cuda()
            img = torch.randn(2, 3, 128, 128)
            return model(img=img)
    """})
    assert _codes(tmp_path, "train.py") == []
