"""Semantics found missing on unseen real cases, batch BG (tests/fixtures/engine/unseen/bg_*): data and
evaluation code (collate functions, batch objects, evaluation callbacks, metrics, inference scripts).

- A DataLoader yields what its collate_fn returns, whatever callable it is: a function, a bound method of the
  dataset (`collate_fn=self.collate_fn`), a `functools.partial` of one (`partial(self.collate_fn, device=device)`),
  a lambda, or an instance of a project class with `__call__` (a collator object, `collate_fn=Collator(pad)`). When that is an instance of a project class (joeynmt's `Batch`, which moves its fields in
  `__init__`), each iteration's batch is that object with its attributes where the class put them: a field the
  class forgot to move stays on the cpu and meets the moved ones (joeynmt/joeynmt#199: `self.trg_length[perm_index]`
  with `perm_index` sorted from the moved `src_length`, DEV204).
- A public method that the file never calls, of a plain class the file instantiates, is called by whatever the
  instance is handed to (Flower's `start_numpy_client(..., client=FlowerClient())` calls `fit` / `evaluate`): it
  is an entry point whose calls are followed, with the module-level values it passes (a global model moved to
  the GPU, a DataLoader of cpu batches). Its callees still get their own pass too. nn.Module methods are not
  such entries (the module machinery runs them), nor methods the file calls itself (adap/flower#1140: the
  accuracy count compares the GPU predictions with the loader's cpu labels in `test()`, DEV202).
- `from_pretrained(..., device_map=<one device>)` (`"cuda"`, `0`, `{"": 0}`, `{"": torch.cuda.current_device()}`,
  `{"": local_rank}`) loads the whole model onto that device, and accelerate attaches no hooks when the map has
  one device: the model is a plain model there, and cpu inputs fed to it fail (transformer-heads#12/#22's
  evaluation reproduced with `device_map={"": torch.cuda.current_device()}`). A dispatching strategy ("auto",
  ...) or a real map stays DEV502's business, `"cpu"` is the cpu, and an unknown map stays unknown."""

from __future__ import annotations

import textwrap

from project_fixtures import codes as _codes, write_project as _project


# ---- collate_fn returning a project batch object -------------------------------------------------------------

_BATCH = """
    import torch


    class Batch:
        def __init__(self, src_length, trg_length, device):
            self.src_length = src_length
            self.trg_length = trg_length
            if device.type == "cuda":
                self._make_cuda(device)

        def _make_cuda(self, device):
            self.src_length = self.src_length.to(device){move_trg}

        def sort_by_src_length(self):
            _, perm_index = self.src_length.sort(0, descending=True)
            return self.trg_length[perm_index]
"""

_DATA = """
    from functools import partial

    import torch
    from torch.utils.data import DataLoader, Dataset

    from batch import Batch


    class Pairs(Dataset):
        def __len__(self):
            return 8

        def __getitem__(self, i):
            return [1, 2, 3], [4, 5]

        def collate_fn(self, batch, device=None):
            src, trg = zip(*batch)
            return Batch(torch.tensor([len(s) for s in src]), torch.tensor([len(t) for t in trg]), device)

        def make_iter(self, device):
            return DataLoader(self, batch_size=2, collate_fn={collate})
"""

_TRAIN = """
    import torch

    from data import Pairs

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    for batch in Pairs().make_iter(device):
        batch.sort_by_src_length()
"""


def _batch_project(tmp_path, collate="partial(self.collate_fn, device=device)", move_trg=""):
    _project(tmp_path, {"batch.py": _BATCH.format(move_trg=move_trg), "data.py": _DATA.format(collate=collate),
                        "train.py": _TRAIN})


def test_partial_of_the_datasets_collate_method_yields_its_batch_object(tmp_path):
    _batch_project(tmp_path)
    assert _codes(tmp_path, "train.py") == [(7, "DEV204")]
    assert _codes(tmp_path, "batch.py") == [(16, "DEV204")]


def test_a_lambda_collate_fn(tmp_path):
    _batch_project(tmp_path, collate="lambda b: self.collate_fn(b, device)")
    assert _codes(tmp_path, "batch.py") == [(16, "DEV204")]


def test_renamed_and_one_helper_deeper(tmp_path):
    _project(tmp_path, {"batch.py": _BATCH.format(move_trg="").replace("sort_by_src_length", "reorder"),
                        "data.py": _DATA.format(collate="partial(self._collate, device=device)")
                        .replace("def collate_fn(self, batch, device=None):",
                                 "def _collate(self, batch, device=None):\n"
                                 "            return self.build(batch, device)\n\n"
                                 "        def build(self, batch, device):"),
                        "train.py": _TRAIN.replace("sort_by_src_length", "reorder")})
    assert _codes(tmp_path, "batch.py") == [(16, "DEV204")]


def test_inside_a_trainer_class(tmp_path):
    _project(tmp_path, {"batch.py": _BATCH.format(move_trg=""), "data.py": _DATA.format(
        collate="partial(self.collate_fn, device=device)"), "train.py": """
        import torch

        from data import Pairs


        class TrainManager:
            def __init__(self):
                self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

            def train(self, data):
                for batch in data.make_iter(self.device):
                    batch.sort_by_src_length()


        TrainManager().train(Pairs())
    """})
    assert _codes(tmp_path, "batch.py") == [(16, "DEV204")]


def test_silent_when_the_batch_moves_every_field(tmp_path):
    _batch_project(tmp_path, move_trg="\n            self.trg_length = self.trg_length.to(device)")
    assert _codes(tmp_path, "batch.py") == []
    assert _codes(tmp_path, "train.py") == []


def test_silent_when_the_batch_class_is_a_librarys(tmp_path):
    _batch_project(tmp_path)
    (tmp_path / "data.py").write_text((tmp_path / "data.py").read_text().replace("from batch import Batch",
                                                                                 "from seqlib import Batch"))
    assert _codes(tmp_path, "train.py") == []


_COLLATOR = """
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader, Dataset

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


    class Pairs(Dataset):
        def __len__(self):
            return 8

        def __getitem__(self, i):
            return torch.randn(4), 1


    class Collator:
        def __init__(self, pad=0):
            self.pad = pad

        def __call__(self, batch):
            xs, ys = zip(*batch)
            return {{"x": torch.stack(xs), "y": torch.tensor(ys)}}


    model = nn.Linear(4, 2).to(device)
    for batch in DataLoader(Pairs(), batch_size=2, collate_fn=Collator()):
        out = model({x})
"""


def test_a_collator_object(tmp_path):
    _project(tmp_path, {"train.py": _COLLATOR.format(x='batch["x"]')})
    assert _codes(tmp_path, "train.py") == [(13, "DEV201")]


def test_silent_when_the_collated_batch_is_moved(tmp_path):
    _project(tmp_path, {"train.py": _COLLATOR.format(x='batch["x"].to(device)')})
    assert _codes(tmp_path, "train.py") == []


# ---- methods of an instance handed to a library ------------------------------------------------------------

_CLIENT = """
    import flwr as fl
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader
    from torchvision.datasets import CIFAR10
    from torchvision.transforms import ToTensor

    DEVICE = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")


    def test(net, testloader):
        correct = 0
        with torch.no_grad():
            for images, labels in testloader:
                outputs = net(images.to(DEVICE))
                correct += (torch.max(outputs.data, 1)[1] == {labels}).sum().item()
        return correct


    net = nn.Linear(4, 2).to(DEVICE)
    testloader = DataLoader(CIFAR10("./data", train=False, transform=ToTensor()))


    class FlowerClient(fl.client.NumPyClient):
        def evaluate(self, parameters, config):
            return test(net, testloader)


    fl.client.start_numpy_client("[::]:8080", client=FlowerClient())
"""


def test_a_library_calls_the_clients_evaluate(tmp_path):
    _project(tmp_path, {"client.py": _CLIENT.format(labels="labels")})
    assert _codes(tmp_path, "client.py") == [(16, "DEV202")]


def test_the_client_in_its_own_file_started_from_another(tmp_path):
    text = textwrap.dedent(_CLIENT.format(labels="labels")).split("\n\n\nfl.client.start_numpy_client")[0]
    _project(tmp_path, {"client.py": text + "\n\n\ndef start():\n    fl.client.start_numpy_client(\"[::]:8080\", "
                                            "client=FlowerClient())\n",
                        "run.py": "from client import start\n\nstart()\n"})
    assert _codes(tmp_path, "client.py") == [(16, "DEV202")]


def test_one_helper_deeper(tmp_path):
    text = _CLIENT.format(labels="labels").replace(
        "            return test(net, testloader)",
        "            return self.score()\n\n        def score(self):\n            return test(net, testloader)")
    _project(tmp_path, {"client.py": text})
    # `score` is called by the file (`self.score()`): followed from `evaluate`, the library's entry
    assert _codes(tmp_path, "client.py") == [(16, "DEV202")]


def test_silent_when_the_labels_are_moved(tmp_path):
    _project(tmp_path, {"client.py": _CLIENT.format(labels="labels.to(DEVICE)")})
    assert _codes(tmp_path, "client.py") == []


def test_silent_when_the_class_is_not_built_here_and_its_arguments_are_unknown(tmp_path):
    text = _CLIENT.format(labels="labels").replace(
        "            return test(net, testloader)", "            return test(parameters, config)")
    _project(tmp_path, {"client.py": text})
    assert _codes(tmp_path, "client.py") == []


def test_module_methods_are_not_library_entries(tmp_path):
    _project(tmp_path, {"model.py": """
        import torch
        import torch.nn as nn

        DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        probe = torch.randn(1, 4)


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 2)

            def forward(self, x):
                return self.fc(x)

            def debug(self):
                return check(self, probe)


        def check(model, x):
            return model(x)


        net = Net().to(DEVICE)
    """})
    # `debug` is an nn.Module method nobody calls: not followed as a library's entry
    assert _codes(tmp_path, "model.py") == []


# ---- a device_map naming one device ------------------------------------------------------------------------

_ONE_DEVICE = """
    import torch
    from datasets import load_dataset
    from torch.utils.data import DataLoader
    from transformers import AutoModelForCausalLM


    def evaluate(model, ds, batch_size=8):
        ds = ds.with_format(type="torch")
        loader = DataLoader(ds, batch_size=batch_size)
        for batch in loader:
            outputs = model(**{batch})
        return outputs


    model = AutoModelForCausalLM.from_pretrained("gpt2", device_map={device_map})
    evaluate(model, load_dataset("imdb")["test"])
"""


def test_device_map_of_the_current_gpu(tmp_path):
    _project(tmp_path, {"evaluate.py": _ONE_DEVICE.format(batch="batch", device_map='{"": torch.cuda.current_device()}')})
    assert _codes(tmp_path, "evaluate.py") == [(11, "DEV202")]


def test_device_map_as_a_string_or_an_index(tmp_path):
    for i, dm in enumerate(['"cuda"', '"cuda:0"', "0", '{"": 0}']):
        _project(tmp_path / str(i), {"evaluate.py": _ONE_DEVICE.format(batch="batch", device_map=dm)})
        assert _codes(tmp_path / str(i), "evaluate.py") == [(11, "DEV202")], dm


def test_device_map_loader_in_another_file_inside_a_class(tmp_path):
    _project(tmp_path, {"loading.py": """
        import torch
        from transformers import AutoModelForSequenceClassification


        def load_classifier(name, device_map="auto"):
            return AutoModelForSequenceClassification.from_pretrained(name, device_map=device_map)
    """, "scorer.py": """
        import torch
        from transformers import AutoTokenizer

        from loading import load_classifier


        class Scorer:
            def __init__(self, name):
                self.tokenizer = AutoTokenizer.from_pretrained(name)
                self.model = load_classifier(name, device_map={"": 0})

            def score(self, text):
                inputs = self.tokenizer(text, return_tensors="pt")
                return self.model(**inputs).logits


        Scorer("distilbert-base-uncased").score("hello")
    """})
    assert _codes(tmp_path, "scorer.py") == [(13, "DEV202")]


def test_silent_when_the_batch_is_moved_to_the_model(tmp_path):
    _project(tmp_path, {"evaluate.py": _ONE_DEVICE.format(
        batch="{k: v.to(model.device) for k, v in batch.items()}", device_map='{"": torch.cuda.current_device()}')})
    assert _codes(tmp_path, "evaluate.py") == []


def test_silent_on_the_cpu_or_with_an_unknown_map(tmp_path):
    _project(tmp_path / "cpu", {"evaluate.py": _ONE_DEVICE.format(batch="batch", device_map='"cpu"')})
    assert _codes(tmp_path / "cpu", "evaluate.py") == []
    text = _ONE_DEVICE.format(batch="batch", device_map="device_map").replace(
        "    model = AutoModelForCausalLM", "    def main(device_map):\n        model = AutoModelForCausalLM").replace(
        '\n    evaluate(model, load_dataset("imdb")["test"])', '\n        evaluate(model, load_dataset("imdb")["test"])')
    _project(tmp_path / "unknown", {"evaluate.py": text})
    assert _codes(tmp_path / "unknown", "evaluate.py") == []


def test_silent_for_a_quantized_model_on_one_device(tmp_path):
    # accelerate attaches its hooks to a quantized model even on one device: they move the inputs
    _project(tmp_path, {"evaluate.py": _ONE_DEVICE.format(batch="batch", device_map='{"": 0}, load_in_4bit=True')})
    assert _codes(tmp_path, "evaluate.py") == []


def test_a_dispatching_map_stays_a_warning(tmp_path):
    _project(tmp_path, {"evaluate.py": _ONE_DEVICE.format(batch="batch", device_map='"auto"')})
    assert [c for _, c in _codes(tmp_path, "evaluate.py")] in ([], ["DEV502"])
