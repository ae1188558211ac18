"""Semantics found missing by the unseen batch ac (training / eval loops and data, tests/fixtures/engine/unseen/ac_*),
each tested on the variations a user writes (renamed, split into files, one helper deeper, inside a trainer class)
and on the neighbours that must stay silent:
- an import statement runs the imported project module's body there (Python's semantics), so process-wide torch
  state that body sets (`torch.set_default_tensor_type('torch.cuda.FloatTensor')`, `torch.set_default_device`,
  `torch.cuda.set_device`) holds from the import on: a shuffling DataLoader built after `from train import train`,
  where train.py sets the cuda tensor type at module level, draws a cpu-generator randperm on cuda (DEV601), and a
  cuda generator given to it is right (no DEV205). Names are still resolved lazily; only the effect moves to the
  import statement;
- a library model class (one whose `from_pretrained` builds it: transformers' PreTrainedModel subclasses, from the
  generated instance_constructors table) constructed directly (`BertForMaskedLM(config)`) is a model with fresh
  weights on the default device, and what its forward returns is an output record whose fields (`out.logits`,
  `out.loss`) are tensors on the model's device;
- a DataLoader given a collate_fn calls it with a list of the dataset's samples (what the project Dataset's
  `__getitem__` returns), not with an unknown value;
- `for k in d:` (`d.keys()`, `d.items()`, also `data[0].keys()`) over a dict with known keys and others not known
  runs once per known key and once more for the others, with a key that is none of the known ones: a store
  `out[k] = ...` on that pass leaves the known entries as they are (a dict's keys are distinct);
- `tqdm(loader)` (and tqdm's other bars, a table generated from the tqdm wheel) yields the loader's batches;
  `tqdm(timesteps)` the elements of a tensor, which may be 0-dim: indexing with one (`alphas_cumprod[t]`) drops a
  dimension as an int index does, so the result may be a 0-dim cpu tensor, which mixes with any device;
- an object of unknown kind given `device=` by a method call (a Hugging Face dataset's
  `set_format("torch", device="cuda")` / `with_format(..., device=...)`) may yield tensors on that device: a
  DataLoader over it no longer takes its batches to be cpu tensors (silent)."""

from __future__ import annotations

from project_fixtures import codes as _codes, write_project as _project

TRAIN = """
import torch
torch.set_default_tensor_type('torch.cuda.FloatTensor')


def train(loader, model, optimizer):
    for x, y in loader:
        x, y = x.cuda(), y.cuda()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
"""

MAIN = """
import torch
from torch.utils.data import DataLoader, TensorDataset
from train import train

if __name__ == '__main__':
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    loader = DataLoader(data, batch_size=8, shuffle=True)
    model = torch.nn.Linear(4, 1).cuda()
    train(loader, model, torch.optim.SGD(model.parameters(), lr=0.1))
"""


def _main_codes(tmp_path, files):
    _project(tmp_path, files)
    return [c for _, c in _codes(tmp_path, "main.py")]


def test_default_type_set_by_an_imported_module_holds_from_the_import(tmp_path):
    assert _main_codes(tmp_path, {"train.py": TRAIN, "main.py": MAIN}) == ["DEV601"]


def test_renamed_and_imported_as_a_module(tmp_path):
    main = MAIN.replace("from train import train", "import engine_loop as el").replace("    train(", "    el.train(")
    assert _main_codes(tmp_path, {"engine_loop.py": TRAIN, "main.py": main}) == ["DEV601"]


def test_setter_one_import_deeper_in_a_package(tmp_path):
    files = {
        "rtfm/__init__.py": "from rtfm.loop import train\n",
        "rtfm/setup_gpu.py": "import torch as th\nth.set_default_tensor_type(th.cuda.FloatTensor)\n",
        "rtfm/loop.py": "import rtfm.setup_gpu\n" + TRAIN.replace("torch.set_default_tensor_type('torch.cuda.FloatTensor')\n", ""),
        "main.py": MAIN.replace("from train import train", "from rtfm import train"),
    }
    assert _main_codes(tmp_path, files) == ["DEV601"]


def test_loader_built_inside_a_trainer_class_after_the_import(tmp_path):
    main = """
    import torch
    from torch.utils.data import DataLoader, TensorDataset
    from train import train


    class Trainer:
        def __init__(self, dataset, batch_size):
            self.loader = DataLoader(dataset, batch_size=batch_size, shuffle=True, drop_last=True)
            self.model = torch.nn.Linear(4, 1).cuda()

        def fit(self):
            train(self.loader, self.model, torch.optim.SGD(self.model.parameters(), lr=0.1))


    if __name__ == '__main__':
        Trainer(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), 8).fit()
    """
    assert _main_codes(tmp_path, {"train.py": TRAIN, "main.py": main}) == ["DEV601"]


def test_cuda_generator_given_to_the_loader_is_right(tmp_path):
    main = MAIN.replace("shuffle=True)", "shuffle=True, generator=torch.Generator(device='cuda'))")
    assert _main_codes(tmp_path, {"train.py": TRAIN, "main.py": main}) == []


def test_setter_inside_a_function_not_run_at_import_stays_silent(tmp_path):
    train = TRAIN.replace("torch.set_default_tensor_type('torch.cuda.FloatTensor')\n",
                          "\n\ndef use_gpu():\n    torch.set_default_tensor_type('torch.cuda.FloatTensor')\n")
    assert _main_codes(tmp_path, {"train.py": train, "main.py": MAIN}) == []


def test_import_after_the_loader_is_built_stays_silent(tmp_path):
    main = """
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    if __name__ == '__main__':
        data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
        loader = DataLoader(data, batch_size=8, shuffle=True)
        for x, y in loader:
            print(x.shape)
        from train import train
    """
    assert _main_codes(tmp_path, {"train.py": TRAIN, "main.py": main}) == []


def test_module_without_a_setter_stays_lazy_and_silent(tmp_path):
    train = TRAIN.replace("torch.set_default_tensor_type('torch.cuda.FloatTensor')\n", "")
    assert _main_codes(tmp_path, {"train.py": train, "main.py": MAIN}) == []


# ---- library model outputs, collate_fn samples, per-key loops, tqdm

TRAINER = """
import torch
from torch.utils.data import DataLoader
from tqdm import tqdm


class EHRTrainer:
    def __init__(self, model, dataset, metrics, collate_fn):
        self.device = torch.device('cuda') if torch.cuda.is_available() else torch.device('cpu')
        self.model = model.to(self.device)
        self.dataset = dataset
        self.metrics = metrics
        self.collate_fn = collate_fn

    def to_device(self, batch):
        return {key: value.to(self.device) for key, value in batch.items()}

    def forward_pass(self, batch):
        batch = self.to_device(batch)
        return self.model(input_ids=batch['concept'], labels=batch['target'])

    def test(self):
        for batch in tqdm(DataLoader(self.dataset, batch_size=8, collate_fn=self.collate_fn)):
            with torch.no_grad():
                outputs = self.forward_pass(batch)
            scores = {name: func(outputs, batch) for name, func in self.metrics.items()}
"""

DATA = """
import torch
from torch.utils.data import Dataset


class MLMDataset(Dataset):
    def __init__(self, features):
        self.features = features

    def __len__(self):
        return len(self.features['concept'])

    def __getitem__(self, index):
        patient = {key: values[index] for key, values in self.features.items()}
        concepts = torch.tensor(patient['concept'])
        patient['concept'] = concepts
        patient['target'] = torch.ones(len(concepts), dtype=torch.long) * -100
        return patient


def pad(data):
    longest = max(len(p['concept']) for p in data)
    for patient in data:
        for key, values in patient.items():
            patient[key] = torch.cat((values, torch.zeros(longest - len(values), dtype=values.dtype)))
    padded = {}
    for key in data[0].keys():
        padded[key] = torch.stack([patient[key] for patient in data])
    return padded


class PrecisionAtK:
    def __init__(self, topk):
        self.topk = topk

    def __call__(self, outputs, batch):
        _, pred = outputs.logits.topk(self.topk, -1)
        return pred[..., 0].eq(batch['target']).float().mean().item()
"""

MAIN_HF = """
import torch
from transformers import BertConfig, BertForMaskedLM

from data import MLMDataset, PrecisionAtK, pad
from trainer import EHRTrainer

if __name__ == '__main__':
    model = BertForMaskedLM(BertConfig(vocab_size=100))
    dataset = MLMDataset(torch.load('features.pt'))
    EHRTrainer(model, dataset, {'top1': PrecisionAtK(1)}, pad).test()
"""


def _hf_codes(tmp_path, files):
    _project(tmp_path, files)
    return sorted(c for _, c in _codes(tmp_path, "trainer.py"))


def test_rebound_batch_reaches_the_metric_on_the_cpu(tmp_path):
    # (DEV201: the target the metric meets is the `torch.ones(...)` __getitem__ made without device=)
    assert _hf_codes(tmp_path, {"trainer.py": TRAINER, "data.py": DATA, "main.py": MAIN_HF}) == ["DEV201"]


def test_batch_moved_in_place_is_right(tmp_path):
    trainer = TRAINER.replace("""        return {key: value.to(self.device) for key, value in batch.items()}""",
                              """        for key, value in batch.items():
            batch[key] = value.to(self.device)""").replace("        batch = self.to_device(batch)\n",
                                                           "        self.to_device(batch)\n")
    assert _hf_codes(tmp_path, {"trainer.py": trainer, "data.py": DATA, "main.py": MAIN_HF}) == []


def test_renamed_and_without_the_progress_bar(tmp_path):
    trainer = TRAINER.replace("tqdm(DataLoader(", "iter(DataLoader(").replace("for batch in", "for minibatch in") \
        .replace("self.forward_pass(batch)", "self.forward_pass(minibatch)").replace("func(outputs, batch)", "func(outputs, minibatch)")
    assert _hf_codes(tmp_path, {"trainer.py": trainer, "data.py": DATA, "main.py": MAIN_HF}) == ["DEV201"]


def test_model_loaded_with_from_pretrained_in_a_helper(tmp_path):
    main = MAIN_HF.replace("from transformers import BertConfig, BertForMaskedLM",
                           "from transformers import BertForMaskedLM\n\n\ndef load():\n"
                           "    return BertForMaskedLM.from_pretrained('bert-base-uncased')") \
        .replace("model = BertForMaskedLM(BertConfig(vocab_size=100))", "model = load()")
    assert _hf_codes(tmp_path, {"trainer.py": TRAINER, "data.py": DATA, "main.py": main}) == ["DEV201"]


def test_unknown_dataset_stays_silent(tmp_path):
    main = MAIN_HF.replace("dataset = MLMDataset(torch.load('features.pt'))", "dataset = torch.load('dataset.pt')")
    assert _hf_codes(tmp_path, {"trainer.py": TRAINER, "data.py": DATA, "main.py": main}) == []


def test_library_model_output_fields_follow_the_model(tmp_path):
    _project(tmp_path, {"run.py": """
        import torch
        from transformers import BertConfig, BertForSequenceClassification

        model = BertForSequenceClassification(BertConfig()).cuda()
        ids = torch.zeros(2, 8, dtype=torch.long).cuda()
        labels = torch.tensor([0, 1])
        out = model(input_ids=ids)
        acc = (out.logits.argmax(-1) == labels).float().mean()
    """})
    assert [c for _, c in _codes(tmp_path, "run.py")] == ["DEV201"]


def test_library_model_left_on_the_cpu_fed_cuda_ids(tmp_path):
    _project(tmp_path, {"run.py": """
        import torch
        from transformers import BertConfig, BertForSequenceClassification

        model = BertForSequenceClassification(BertConfig())
        ids = torch.zeros(2, 8, dtype=torch.long).cuda()
        out = model(input_ids=ids)
    """})
    assert [c for _, c in _codes(tmp_path, "run.py")] == ["DEV106"]


def test_output_fields_on_the_same_device_are_right(tmp_path):
    _project(tmp_path, {"run.py": """
        import torch
        from transformers import BertConfig, BertForSequenceClassification

        model = BertForSequenceClassification(BertConfig()).cuda()
        ids = torch.zeros(2, 8, dtype=torch.long).cuda()
        labels = torch.tensor([0, 1]).cuda()
        out = model(input_ids=ids, labels=labels)
        acc = (out.logits.argmax(-1) == labels).float().mean() + out.loss
    """})
    assert _codes(tmp_path, "run.py") == []


def test_per_key_loop_keeps_known_entries_of_a_partly_known_dict(tmp_path):
    _project(tmp_path, {"run.py": """
        import torch

        def pad(data):
            padded = {}
            for key in data[0].keys():
                padded[key] = torch.stack([p[key] for p in data])
            return padded

        feats = torch.load('f.pt')
        sample = {k: v[0] for k, v in feats.items()}
        sample['target'] = torch.ones(3, dtype=torch.long)
        batch = pad([sample])
        print(batch['target'] + torch.zeros(3, device='cuda'))
    """})
    assert [c for _, c in _codes(tmp_path, "run.py")] == ["DEV201"]


def test_per_key_loop_entry_not_known_stays_silent(tmp_path):
    _project(tmp_path, {"run.py": """
        import torch

        def pad(data):
            padded = {}
            for key in data[0].keys():
                padded[key] = torch.stack([p[key] for p in data])
            return padded

        feats = torch.load('f.pt')
        sample = {k: v[0] for k, v in feats.items()}
        sample['target'] = torch.ones(3, dtype=torch.long)
        batch = pad([sample])
        print(batch['age'] + torch.zeros(3, device='cuda'))
    """})
    assert _codes(tmp_path, "run.py") == []


def test_store_under_the_other_keys_still_reaches_entries_of_another_dict(tmp_path):
    _project(tmp_path, {"run.py": """
        import torch

        feats = torch.load('f.pt')
        sample = {k: v[0] for k, v in feats.items()}
        sample['target'] = torch.ones(3, dtype=torch.long)
        out = {'age': torch.ones(3)}
        for key in sample.keys():
            out[key] = sample[key].cuda()
        print(out['age'] + torch.zeros(3, device='cuda'))
    """})
    assert _codes(tmp_path, "run.py") == []


def test_tqdm_over_a_loader_yields_its_cpu_batches(tmp_path):
    _project(tmp_path, {"run.py": """
        import torch
        from torch.utils.data import DataLoader, TensorDataset
        from tqdm.auto import tqdm

        model = torch.nn.Linear(4, 1).cuda()
        loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.randn(8, 1)), batch_size=2)
        pbar = tqdm(loader, desc='train')
        for x, y in pbar:
            loss = torch.nn.functional.mse_loss(model(x), y)
            pbar.set_postfix(loss=loss.item())
    """})
    assert [c for _, c in _codes(tmp_path, "run.py")] == ["DEV202"]


def test_tqdm_over_moved_batches_is_right(tmp_path):
    _project(tmp_path, {"run.py": """
        import torch
        from torch.utils.data import DataLoader, TensorDataset
        from tqdm import tqdm

        model = torch.nn.Linear(4, 1).cuda()
        loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.randn(8, 1)), batch_size=2)
        for x, y in tqdm(loader):
            x, y = x.cuda(), y.cuda()
            loss = torch.nn.functional.mse_loss(model(x), y)
        for step in tqdm(range(10)):
            print(step)
    """})
    assert _codes(tmp_path, "run.py") == []


def test_tensor_element_index_may_give_a_0dim_cpu_tensor(tmp_path):
    _project(tmp_path, {"run.py": """
        import numpy as np
        import torch
        from tqdm import tqdm

        alphas_cumprod = torch.cumprod(1.0 - torch.linspace(0.0001, 0.02, 1000), dim=0)
        timesteps = torch.from_numpy(np.arange(0, 1000, 20)[::-1].copy())
        latents = torch.randn(1, 4, 8, 8, device='cuda')
        for t in tqdm(timesteps):
            noise = torch.randn(1, 4, 8, 8, device='cuda')
            latents = (latents - (1 - alphas_cumprod[t]) ** 0.5 * noise) / alphas_cumprod[t] ** 0.5
    """})
    assert _codes(tmp_path, "run.py") == []


def test_tensor_index_slice_of_cpu_table_still_mixes(tmp_path):
    _project(tmp_path, {"run.py": """
        import torch

        alphas_cumprod = torch.cumprod(1.0 - torch.linspace(0.0001, 0.02, 1000), dim=0)
        t = torch.randint(0, 1000, (8,), device='cuda')
        x = torch.randn(8, 3, device='cuda')
        print(alphas_cumprod[t.cpu()].view(-1, 1) * x)
    """})
    assert [c for _, c in _codes(tmp_path, "run.py")] == ["DEV201"]


def test_pipeline_output_is_not_a_model_output(tmp_path):
    _project(tmp_path, {"run.py": """
        import torch
        from diffusers import DiTPipeline
        from torchmetrics.image.fid import FrechetInceptionDistance

        pipe = DiTPipeline.from_pretrained("facebook/DiT-XL-2-256", torch_dtype=torch.float16).to("cuda")
        output = pipe(class_labels=[1, 2], output_type="numpy")
        fake_images = torch.tensor(output.images).permute(0, 3, 1, 2)
        fid = FrechetInceptionDistance(normalize=True)
        fid.update(fake_images, real=False)
    """})
    assert _codes(tmp_path, "run.py") == []


DATASETS_LOOP = """
import torch
from datasets import load_dataset
from torch.utils.data import DataLoader
from tqdm import tqdm
from transformers import BertForSequenceClassification

dataset = load_dataset('imdb', split='train')
CONFIGURE
loader = DataLoader(dataset, batch_size=4)
model = BertForSequenceClassification.from_pretrained('bert-base-uncased').to('cuda')
for batch in tqdm(loader):
    outputs = model(**batch)
"""


def test_dataset_formatted_on_cuda_stays_silent(tmp_path):
    _project(tmp_path, {"run.py": DATASETS_LOOP.replace("CONFIGURE", 'dataset.set_format(type="torch", device="cuda")')})
    assert _codes(tmp_path, "run.py") == []


def test_dataset_reformatted_with_a_device_stays_silent(tmp_path):
    _project(tmp_path, {"run.py": DATASETS_LOOP.replace("CONFIGURE", 'dataset = dataset.with_format("torch", device="cuda")')})
    assert _codes(tmp_path, "run.py") == []


def test_dataset_formatted_without_a_device_gives_cpu_batches(tmp_path):
    _project(tmp_path, {"run.py": DATASETS_LOOP.replace("CONFIGURE", 'dataset.set_format(type="torch")')})
    assert [c for _, c in _codes(tmp_path, "run.py")] == ["DEV202"]
