"""Semantics found missing on unseen real cases, batch E (tests/fixtures/engine/unseen/e_*).

`t[idx] = v` with a tensor (or list) index is `t.index_put_(idx, v)`: the values must be on `t`'s device
(a 0-dim cpu tensor excepted), and a cpu `t` takes no index on a device (e_torchsurv_ipcw_km_cpu:
`ipcw[mask] = 1 / ct[mask]` with the censoring estimate fitted on the cpu). With ints and slices only
it is `t[idx].copy_(v)`, which crosses devices: silent."""

from __future__ import annotations

import textwrap

from devflow.api import check_path, check_source


def _codes(src: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics]


def test_masked_store_of_cpu_values_into_a_device_tensor():
    assert _codes("""
        import torch

        x = torch.rand(8, device="cuda")
        out = torch.zeros_like(x)
        vals = torch.ones(8)
        out[x > 0.5] = vals[x.cpu() > 0.5]
        """) == [(6, "DEV201")]


def test_store_through_helpers_renamed_in_a_class():
    # the estimate comes from an object that keeps its own (cpu) device, one call deeper
    assert _codes("""
        import torch

        class Fitter:
            def __init__(self, device=None):
                self.dev = torch.device("cpu") if device is None else torch.device(device)

            def estimate(self, t):
                t = t.to(self.dev)
                return torch.ones_like(t, device=self.dev) / (t + 1)

        def inverse_weights(times):
            est = Fitter().estimate(times)
            keep = est > 0
            weights = torch.zeros_like(times)
            weights[keep] = 1.0 / est[keep]
            return weights

        class Trainer:
            def __init__(self):
                self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

            def step(self, times):
                return inverse_weights(times.to(self.device))

        Trainer().step(torch.rand(16))
        """) == [(13, "DEV202")]


def test_store_in_another_file(tmp_path):
    (tmp_path / "weights.py").write_text(textwrap.dedent("""
        import torch

        def table(n):
            return torch.linspace(0, 1, n)

        def fill(buf, idx):
            buf[idx] = table(len(idx))
            return buf
        """))
    (tmp_path / "run.py").write_text(textwrap.dedent("""
        import torch
        from weights import fill

        device = "cuda"
        buf = torch.zeros(10, device=device)
        fill(buf, torch.arange(4, device=device))
        """))
    result = check_path(str(tmp_path / "run.py"))
    assert [(d.span.line, d.code) for d in result.diagnostics] == [(7, "DEV202")]


def test_cpu_tensor_stored_at_device_indices_is_accepted_but_read_is_not():
    # index_put_ moves the indices to the stored-into tensor's device (ATen make_info); reading
    # (index) checks them: "indices should be either on cpu or on the same device".
    assert _codes("""
        import torch

        beams = torch.zeros(4, 10).long()
        scores = torch.rand(4, device="cuda")
        rows = torch.argsort(scores)[:2]
        beams[rows] = 1
        mask = torch.rand(4, 10, device="cuda") < 0.5
        beams[mask] = 0
        best = beams[rows]
        """) == [(10, "DEV204")]


def test_copies_zero_dim_values_and_unknown_indices_stay_silent():
    assert _codes("""
        import torch

        def store(out, idx, vec):
            out[idx] = vec  # idx may be an int: a copy

        x = torch.zeros(4, 3, device="cuda")
        row = torch.ones(3)
        x[0] = row                      # ints and slices: a copy, across devices
        x[:, 1] = torch.arange(4)
        x[x > 0] = torch.tensor(2.0)    # a 0-dim cpu value: a scalar to CUDA
        x[torch.tensor([0, 1], device="cuda")] = row.to("cuda")
        store(x, 2, row)
        """) == []


# torch_geometric's DataLoader (and the other loaders of the table that collate a dataset given first)
# is a torch DataLoader: its batches are on the cpu (e_pyg_clique_test_not_moved). A batch is a Batch
# object whose .to() moves it in place.

def test_graph_loader_batch_not_moved_in_a_trainer_class(tmp_path):
    (tmp_path / "models.py").write_text(textwrap.dedent("""
        import torch
        import torch.nn.functional as F
        from torch_geometric.nn import GCNConv, global_mean_pool

        class GraphNet(torch.nn.Module):
            def __init__(self, n_in, n_out):
                super().__init__()
                self.conv = GCNConv(n_in, 32)
                self.head = torch.nn.Linear(32, n_out)

            def forward(self, batch):
                h = F.relu(self.conv(batch.x, batch.edge_index))
                return self.head(global_mean_pool(h, batch.batch))
        """))
    (tmp_path / "train.py").write_text(textwrap.dedent("""
        import torch
        import torch_geometric.loader as tgl
        from models import GraphNet

        class Evaluator:
            def __init__(self, dataset, device):
                self.device = device
                self.net = GraphNet(dataset.num_features, dataset.num_classes).to(device)
                self.loader = tgl.DataLoader(dataset, batch_size=32)

            def accuracy(self):
                hits = 0
                for graphs in self.loader:
                    hits += int((self.net(graphs).argmax(-1) == graphs.y).sum())
                return hits

        def main(dataset):
            Evaluator(dataset, torch.device("cuda")).accuracy()
        """))
    result = check_path(str(tmp_path / "train.py"))
    assert [(d.span.line, d.code) for d in result.diagnostics] == [(15, "DEV202")]


def test_graph_loader_batches_moved_or_over_one_graph_stay_silent():
    assert _codes("""
        import torch
        from torch_geometric.loader import DataLoader, NeighborLoader

        def run(dataset, data, model):
            device = torch.device("cuda")
            model = model.to(device)
            for batch in DataLoader(dataset, batch_size=8):
                model(batch.to(device))
            data = data.to(device)
            for sub in NeighborLoader(data, num_neighbors=[10], batch_size=64):
                model(sub)  # slices of the graph it was given, on its device
        """) == []


def test_graph_batch_moved_in_place_by_a_statement():
    assert _codes("""
        import torch
        from torch_geometric.loader import DataLoader

        def explain(dataset):
            device = torch.device("cuda")
            model = torch.nn.Linear(4, 2).to(device)
            for batch in DataLoader(dataset, batch_size=8):
                batch.to(device)
                model(batch)
        """) == []
    assert _codes("""
        import torch
        from torch_geometric.loader import DataLoader

        def explain(dataset):
            device = torch.device("cuda")
            model = torch.nn.Linear(4, 2).to(device)
            for batch in DataLoader(dataset, batch_size=8):
                batch.to(torch.float16)
                model(batch)
        """) == [(10, "DEV202")]  # still on the cpu


def test_list_loaders_are_no_batch_loaders():
    from devflow.analysis import framework_api as FW
    assert "torch_geometric.loader.DataLoader" in FW.DATASET_LOADERS
    assert not any(q.endswith("DataListLoader") for q in FW.DATASET_LOADERS)  # lists for pyg's DataParallel


# transformers' own callbacks that keep a tensor on their `device=` (default "cpu"), called on another
# device (e_openclip_coca_min_length_processor).

def test_library_logits_processor_in_a_list_called_in_a_helper():
    assert _codes("""
        import torch
        from transformers import LogitsProcessorList, MinLengthLogitsProcessor, TopKLogitsWarper

        def build(min_len, eos):
            return LogitsProcessorList([MinLengthLogitsProcessor(min_len, eos), TopKLogitsWarper(5)])

        def step(procs, ids, logits):
            return procs(ids, logits)

        ids = torch.zeros(1, 3, dtype=torch.long, device="cuda")
        logits = torch.randn(1, 100, device="cuda")
        step(build(5, 2), ids, logits)
        """) == [(6, "DEV201")]  # where it is built: its fix is `device=`


def test_library_logits_processor_passed_to_generate():
    assert _codes("""
        import torch
        from transformers import AutoModelForCausalLM, LogitsProcessorList
        from transformers.generation import MinNewTokensLengthLogitsProcessor

        model = AutoModelForCausalLM.from_pretrained("gpt2").to("cuda")
        ids = torch.tensor([[1, 2, 3]], device="cuda")
        procs = LogitsProcessorList([MinNewTokensLengthLogitsProcessor(3, 10, eos_token_id=50256)])
        out = model.generate(ids, logits_processor=procs, max_new_tokens=20)
        """) == [(8, "DEV201")]


def test_library_logits_processors_on_the_right_device_stay_silent():
    assert _codes("""
        import torch
        from transformers import (AutoModelForCausalLM, LogitsProcessorList, MinLengthLogitsProcessor,
                                  SuppressTokensLogitsProcessor)

        model = AutoModelForCausalLM.from_pretrained("gpt2")
        ids = torch.tensor([[1, 2, 3]])
        model.generate(ids, logits_processor=LogitsProcessorList([MinLengthLogitsProcessor(5, 2)]))
        logits = torch.randn(1, 100, device="cuda")
        cuda_ids = ids.to("cuda")
        MinLengthLogitsProcessor(5, 2, device=logits.device)(cuda_ids, logits)
        MinLengthLogitsProcessor(5, 2, device="cuda")(cuda_ids, logits)
        SuppressTokensLogitsProcessor([1, 2])(cuda_ids, logits)  # moves its tokens to the scores' device
        """) == []


# `t[i:j] += v` is an in-place op on a view of `t`: on t's device (the code2seq confusion-matrix reduction:
# a cpu accumulator, device counts from the steps).

def test_augmented_store_into_a_slice_of_a_cpu_accumulator():
    assert _codes("""
        import torch

        def reduce(parts, n):
            total = torch.zeros(n, n)
            for part in parts:
                k = part.shape[0]
                total[:k, :k] += part
            return total.trace() / total.sum()

        counts = [torch.ones(3, 3, device="cuda")]
        reduce(counts, 5)
        """) == [(5, "DEV201")]


def test_augmented_stores_that_stay_silent():
    assert _codes("""
        import torch

        totals = {"loss": 0.0}
        x = torch.zeros(4, device="cuda")
        loss = torch.ones(1, device="cuda").sum()
        totals["loss"] += loss.item()   # a container's item
        x[:2] += torch.tensor(1.0)      # a 0-dim cpu value
        hist = torch.zeros(4)
        hist[0] += loss.item()          # a number
        """) == []


# torchvision transforms make tensors on the cpu from host images (PIL); what PIL returns is host data
# (the CLIP / classifier inference kind: `preprocess(Image.open(p)).unsqueeze(0)` fed to a GPU model).

def test_preprocessed_image_not_moved_in_a_predictor_class(tmp_path):
    (tmp_path / "preprocessing.py").write_text(textwrap.dedent("""
        from torchvision.transforms import v2

        def build_transform(size):
            return v2.Compose([v2.Resize(size), v2.ToImage(), v2.ToDtype(float, scale=True)])
        """))
    (tmp_path / "predict.py").write_text(textwrap.dedent("""
        import torch
        from PIL import Image
        from torchvision.models import resnet50
        from preprocessing import build_transform

        class Predictor:
            def __init__(self, device="cuda"):
                self.device = device
                self.net = resnet50(weights=None).to(device).eval()
                self.tf = build_transform(224)

            def __call__(self, path):
                batch = self.tf(Image.open(path).convert("RGB"))[None]
                with torch.no_grad():
                    return self.net(batch).softmax(-1)

        Predictor()("dog.jpg")
        """))
    result = check_path(str(tmp_path / "predict.py"))
    assert [(d.span.line, d.code) for d in result.diagnostics] == [(14, "DEV202")]


def test_transforms_of_tensors_or_on_cpu_models_stay_silent():
    assert _codes("""
        import torch
        import torchvision.transforms as T
        from PIL import Image

        tf = T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor()])
        resize = T.Compose([T.Resize(256)])
        cpu_model = torch.nn.Conv2d(3, 8, 3)
        gpu_model = torch.nn.Conv2d(3, 8, 3).cuda()

        def run(frames):
            img = Image.open("a.png")
            cpu_model(tf(img).unsqueeze(0))             # both on the cpu
            gpu_model(tf(img).unsqueeze(0).cuda())      # moved
            gpu_model(resize(frames))                   # a tensor of unknown device keeps it
        """) == []
