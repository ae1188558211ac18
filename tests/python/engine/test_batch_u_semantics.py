"""Semantics found missing by the unseen batch U (tests/fixtures/engine/unseen/u_*: Hugging Face and friends),
each tested on the variations a user writes (renamed, split into files, one helper deeper, inside a class)
and on the neighbours that must stay silent:
- a `@property` read as the callee (`nli.deberta(**enc)`): Python runs the getter first and calls what it
  returns, so the model a lazy-loading wrapper keeps (`self._deberta`, moved in `setup()`) is what meets
  the inputs;
- a model of one class built and moved on each branch of the `if` that chooses the device (cpu in a test
  mode, the accelerator otherwise) is one model on the chosen device after the `if`, as one built before
  it and moved after it would be: a head assigned afterwards stays on the cpu;
- devices configured from the environment as a command-line option is (by the default's value): an
  `os.getenv` whose fallback names an accelerator is that variable's accelerator; a placeholder string that
  is no device (`cuda_core = ""`) joined with an accelerator is the accelerator wherever it serves as one;
- an uncalled decorated top-level function (a web route, a startup hook) is an entry point whose calls are
  followed; a thread pool's `submit(fn, *args)` / `asyncio.to_thread` run `fn(*args)`, the future its result;
- one of several objects of project classes (a backend picked by what is on disk, a factory's `return
  T5Model()` / `return HFModel()`, an attribute set on both branches): a method called on it runs each one's;
  the models their methods return stay a choice that `.to()` moves one by one;
- a tokenizer's output stays a BatchEncoding when a helper returns it (its `.to()` moves it in place), and
  one made without `return_tensors` holds Python lists: `torch.tensor(enc.input_ids)` is on the cpu;
- a library model's submodule called directly (`clip_model.text_model(**inputs)`, knowledge
  `called_submodules`: attributes its classes set in `__init__` and call in their own methods) runs
  parameters that sit where the model is."""

from __future__ import annotations

from project_fixtures import codes as _codes, write_project as _project

_WRAPPER = """
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer


    class NLI:
        def __init__(self, path="microsoft/deberta-large-mnli", device=None):
            self.path = path
            self._model = None
            self._tok = None
            self.device = device or ("cuda:0" if torch.cuda.is_available() else "cpu")

        @property
        def model(self):
            if self._model is None:
                self.setup()
            return self._model

        @property
        def tokenizer(self):
            if self._tok is None:
                self.setup()
            return self._tok

        def setup(self):
            if self._model is not None:
                return
            self._model = AutoModelForSequenceClassification.from_pretrained(self.path)
            self._tok = AutoTokenizer.from_pretrained(self.path)
            self._model.to(self.device)
"""


# ---- a property read as the callee
def test_property_getter_is_what_is_called(tmp_path):
    _project(tmp_path, {"nli.py": _WRAPPER + """

    nli = NLI()
    enc = nli.tokenizer("a", "b", return_tensors="pt")
    logits = nli.model(**enc).logits
    """})
    assert _codes(tmp_path, "nli.py") == [(33, "DEV202")]


def test_property_callee_split_into_files_inside_a_scorer_class_one_helper_deeper(tmp_path):
    _project(tmp_path, {"nli.py": _WRAPPER, "scorer.py": """
        import torch


        class PairScorer:
            def __init__(self, nli_model):
                self.nli_model = nli_model

            def _encode(self, first, second):
                return self.nli_model.tokenizer(first, second, padding=True, return_tensors="pt")

            def score(self, first, second):
                judge = self.nli_model
                with torch.no_grad():
                    logits = judge.model(**self._encode(first, second)).logits
                return logits.softmax(-1)
    """, "run.py": """
        from nli import NLI
        from scorer import PairScorer

        scorer = PairScorer(NLI())
        print(scorer.score(["x"], ["y"]))
    """})
    assert _codes(tmp_path, "scorer.py") == [(9, "DEV202")]


def test_property_callee_silent_when_inputs_follow_the_wrapper(tmp_path):
    _project(tmp_path, {"nli.py": _WRAPPER + """

    def score(nli, a, b):
        enc = nli.tokenizer(a, b, return_tensors="pt").to(nli.device)
        return nli.model(**enc).logits


    def score_on_model_device(nli, a, b):
        enc = nli.tokenizer(a, b, return_tensors="pt").to(nli.model.device)
        return nli.model(**enc).logits


    score(NLI(), "a", "b")
    score_on_model_device(NLI(), "a", "b")
    """})
    assert _codes(tmp_path, "nli.py") == []


# ---- a model built and moved on each branch of the `if` that chooses the device
_GPT = """
    import torch
    from torch import nn


    class GPTModel(nn.Module):
        def __init__(self, cfg):
            super().__init__()
            self.tok_emb = nn.Embedding(cfg["vocab_size"], cfg["emb_dim"])
            self.final_norm = nn.LayerNorm(cfg["emb_dim"])
            self.out_head = nn.Linear(cfg["emb_dim"], cfg["vocab_size"], bias=False)

        def forward(self, idx):
            return self.out_head(self.final_norm(self.tok_emb(idx)))
"""


def test_model_built_and_moved_on_each_branch_is_on_the_chosen_device(tmp_path):
    _project(tmp_path, {"finetune.py": _GPT + """

    def calc_loss_batch(input_batch, target_batch, model, device):
        input_batch, target_batch = input_batch.to(device), target_batch.to(device)
        logits = model(input_batch)[:, -1, :]
        return nn.functional.cross_entropy(logits, target_batch)


    if __name__ == "__main__":
        import argparse
        parser = argparse.ArgumentParser()
        parser.add_argument("--test_mode", action="store_true")
        args = parser.parse_args()
        if args.test_mode:
            cfg = {"vocab_size": 50257, "emb_dim": 12}
            model = GPTModel(cfg)
            device = "cpu"
            model.to(device)
        else:
            cfg = {"vocab_size": 50257, "emb_dim": 768}
            model = GPTModel(cfg)
            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            model.to(device)
        model.out_head = nn.Linear(cfg["emb_dim"], 2)
        x, y = torch.randint(0, 50257, (8, 16)), torch.randint(0, 2, (8,))
        print(calc_loss_batch(x, y, model, device))
    """})
    assert _codes(tmp_path, "finetune.py") == [(37, "DEV101")]


def test_model_loaded_by_a_helper_per_branch_split_into_files_inside_a_function(tmp_path):
    _project(tmp_path, {"gpt.py": _GPT, "loading.py": """
        import torch
        from gpt import GPTModel


        def small_model(cfg, device):
            model = GPTModel(cfg)
            model.eval()
            return model.to(device)


        def pretrained_model(cfg, path, device):
            model = GPTModel(cfg)
            model.load_state_dict(torch.load(path, map_location="cpu"))
            model.to(device)
            return model
    """, "train.py": """
        import torch
        from torch import nn
        from loading import pretrained_model, small_model


        def build(config):
            if config["smoke_test"]:
                device = "cpu"
                model = small_model(config["model"], device)
            else:
                device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
                model = pretrained_model(config["model"], config["ckpt"], device)
            model.out_head = nn.Linear(config["model"]["emb_dim"], config["num_classes"])
            return model, device
    """})
    assert _codes(tmp_path, "train.py") == [(13, "DEV101")]


def test_model_per_branch_silent_when_the_head_comes_before_the_move_or_the_classes_differ(tmp_path):
    _project(tmp_path, {"gpt.py": _GPT, "train.py": """
        import torch
        from torch import nn
        from gpt import GPTModel


        class TinyModel(nn.Module):
            def __init__(self):
                super().__init__()
                self.out_head = nn.Linear(4, 4)

            def forward(self, x):
                return self.out_head(x)


        def head_first(cfg, test_mode):
            if test_mode:
                model = GPTModel(cfg)
                model.out_head = nn.Linear(cfg["emb_dim"], 2)
                device = "cpu"
                model.to(device)
            else:
                model = GPTModel(cfg)
                model.out_head = nn.Linear(cfg["emb_dim"], 2)
                device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
                model.to(device)
            return model(torch.randint(0, 10, (2, 3)).to(device))


        def unlike_models(cfg, test_mode):
            if test_mode:
                model = TinyModel()
                device = "cpu"
                model.to(device)
            else:
                model = GPTModel(cfg)
                device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
                model.to(device)
            model.out_head = nn.Linear(4, 2)
            return model
    """})
    assert _codes(tmp_path, "train.py") == []


# ---- devices configured from the environment, on the terms of a command-line option
def test_environment_variable_with_an_accelerator_fallback_is_the_accelerator(tmp_path):
    _project(tmp_path, {"serve.py": """
        import os
        import torch
        from torch import nn

        core = os.getenv("CUDA_CORE")
        if core is None or core == "":
            core = "cuda:0"
        m = nn.Linear(3, 3).to(core)
        m(torch.zeros(2, 3))

        dev = os.environ.get("DEVICE", "cuda")
        m2 = nn.Linear(3, 3).to(dev)
        m2(torch.zeros(2, 3))

        dev3 = os.getenv("DEVICE3") or "cuda:1"
        m3 = nn.Linear(3, 3).to(dev3)
        m3(torch.zeros(2, 3))
    """})
    assert _codes(tmp_path, "serve.py") == [(9, "DEV201"), (13, "DEV201"), (17, "DEV201")]


def test_flag_gated_environment_device_through_a_startup_hook_into_a_backend_class_split_into_files(tmp_path):
    _project(tmp_path, {"backend.py": """
        import torch
        from transformers import CLIPModel, CLIPProcessor


        class Embedder:
            def __init__(self, cuda, cuda_core):
                device = "cpu"
                if cuda:
                    device = cuda_core
                self.model = CLIPModel.from_pretrained("./models/clip").to(device)
                self.processor = CLIPProcessor.from_pretrained("./models/clip")

            def texts(self, texts):
                inputs = self.processor(text=texts, return_tensors="pt", padding=True)
                return self.model(**inputs)
    """, "app.py": """
        import os
        from fastapi import FastAPI
        from backend import Embedder

        app = FastAPI()
        embedder: Embedder


        @app.on_event("startup")
        def startup():
            global embedder
            cuda_support = False
            cuda_core = ""
            if os.getenv("ENABLE_CUDA") == "1":
                cuda_support = True
                cuda_core = os.getenv("CUDA_CORE")
                if cuda_core is None or cuda_core == "":
                    cuda_core = "cuda:0"
            embedder = Embedder(cuda_support, cuda_core)


        @app.post("/texts")
        def texts(payload: list):
            return embedder.texts(payload).tolist()
    """})
    assert _codes(tmp_path, "app.py") == [(24, "DEV202")]


def test_environment_devices_silent_with_a_cpu_or_no_fallback_or_inputs_moved(tmp_path):
    _project(tmp_path, {"serve.py": """
        import os
        import torch
        from torch import nn

        d1 = os.getenv("DEV1", "cpu")
        nn.Linear(3, 3).to(d1)(torch.zeros(2, 3))
        m1 = nn.Linear(3, 3).to(d1)
        m1(torch.zeros(2, 3))

        d2 = os.getenv("DEV2")
        m2 = nn.Linear(3, 3).to(d2)
        m2(torch.zeros(2, 3))

        d3 = os.getenv("DEV3") or "cuda"
        m3 = nn.Linear(3, 3).to(d3)
        m3(torch.zeros(2, 3).to(d3))

        core = ""
        if os.getenv("ENABLE_CUDA") == "1":
            core = "cuda:0"
        m4 = nn.Linear(3, 3).to(core)
        m4(torch.zeros(2, 3, device=core))
    """})
    assert _codes(tmp_path, "serve.py") == []


# ---- one of several objects: a backend picked at run time, a factory's choice, work handed to a thread pool
_BACKENDS = """
    import torch
    from transformers import AutoModel, AutoTokenizer, T5ForConditionalGeneration, T5Tokenizer


    class Encoder:
        def create(self, path):
            self.model = AutoModel.from_pretrained(path)
            self.tokenizer = AutoTokenizer.from_pretrained(path)
            return self.model

        def run(self, tokens, texts):
            return self.model(**tokens)


    class T5Encoder(Encoder):
        def create(self, path):
            self.model = T5ForConditionalGeneration.from_pretrained(path)
            self.tokenizer = T5Tokenizer.from_pretrained(path)
            return self.model

        def run(self, tokens, texts):
            labels = torch.tensor(self.tokenizer(texts, padding="longest").input_ids)
            return self.model(input_ids=tokens["input_ids"], labels=labels)


    def make_encoder(kind):
        if kind == "t5":
            return T5Encoder()
        return Encoder()
"""


def test_factory_choice_moved_through_the_result_runs_each_backend(tmp_path):
    _project(tmp_path, {"backends.py": _BACKENDS, "service.py": """
        import asyncio
        from concurrent.futures import ThreadPoolExecutor
        from backends import make_encoder


        class Service:
            def __init__(self, path, kind, device):
                self.encoder = make_encoder(kind)
                self.model = self.encoder.create(path)
                self.model.to(device)
                self.pool = ThreadPoolExecutor()

            def _embed(self, texts):
                tokens = self.encoder.tokenizer(texts, padding=True, return_tensors="pt")
                tokens.to(self.model.device)
                return self.encoder.run(tokens, texts)

            async def embed(self, texts):
                return await asyncio.wrap_future(self.pool.submit(self._embed, texts))


        async def main(kind):
            service = Service("./model", kind, "cuda:0")
            return await service.embed(["a b"])
    """})
    assert _codes(tmp_path, "service.py") == [(16, "DEV201")]


def test_backend_picked_by_what_is_on_disk_is_either_one(tmp_path):
    _project(tmp_path, {"backends.py": _BACKENDS, "service.py": """
        import os
        from backends import Encoder, T5Encoder


        class Service:
            def __init__(self, path):
                if os.path.exists(os.path.join(path, "spiece.model")):
                    self.encoder = T5Encoder()
                else:
                    self.encoder = Encoder()
                self.encoder.create(path).to("cuda:0")

            def embed(self, texts):
                tokens = self.encoder.tokenizer(texts, padding=True, return_tensors="pt").to("cuda:0")
                return self.encoder.run(tokens, texts)


        Service("./model").embed(["a"])
    """})
    assert _codes(tmp_path, "service.py") == [(15, "DEV201")]


def test_choices_silent_when_each_path_places_its_inputs(tmp_path):
    _project(tmp_path, {"backends.py": _BACKENDS.replace(
        'labels = torch.tensor(self.tokenizer(texts, padding="longest").input_ids)',
        'labels = torch.tensor(self.tokenizer(texts, padding="longest").input_ids, device=tokens["input_ids"].device)'),
        "service.py": """
        from backends import make_encoder


        def helper_tokens(encoder, texts):
            return encoder.tokenizer(texts, padding=True, return_tensors="pt")


        def main(kind, device):
            encoder = make_encoder(kind)
            model = encoder.create("./model")
            model.to("cuda:0")
            tokens = helper_tokens(encoder, ["a"])
            tokens.to("cuda:0")
            return encoder.run(tokens, ["a"])
    """})
    assert _codes(tmp_path, "service.py") == []


# ---- a library model's submodule called directly
def test_library_model_submodule_called_directly_meets_the_inputs(tmp_path):
    _project(tmp_path, {"embed.py": """
        import torch
        from transformers import CLIPModel, CLIPProcessor


        class TextEmbedder:
            def __init__(self, path):
                self.clip = CLIPModel.from_pretrained(path).to("cuda")
                self.processor = CLIPProcessor.from_pretrained(path)

            def __call__(self, texts):
                inputs = self.processor(text=texts, return_tensors="pt", padding=True)
                pooled = self.clip.text_model(**inputs)[1]
                return self.clip.text_projection(pooled)


        print(TextEmbedder("openai/clip-vit-base-patch32")(["a"]).shape)
    """})
    assert _codes(tmp_path, "embed.py") == [(11, "DEV202")]


def test_library_model_submodule_silent_when_inputs_are_moved_or_the_model_stays(tmp_path):
    _project(tmp_path, {"embed.py": """
        import torch
        from transformers import CLIPModel, CLIPProcessor

        clip = CLIPModel.from_pretrained("openai/clip-vit-base-patch32").to("cuda")
        processor = CLIPProcessor.from_pretrained("openai/clip-vit-base-patch32")
        inputs = processor(text=["a"], return_tensors="pt", padding=True).to("cuda")
        pooled = clip.text_model(**inputs)[1]
        feats = clip.text_projection(pooled)

        cpu_clip = CLIPModel.from_pretrained("openai/clip-vit-base-patch32")
        more = processor(text=["b"], return_tensors="pt", padding=True)
        out = cpu_clip.vision_model(pixel_values=torch.rand(1, 3, 224, 224))
        txt = cpu_clip.text_model(**more)
    """})
    assert _codes(tmp_path, "embed.py") == []


def test_wrapper_objects_chosen_on_branches_silent_when_a_delegated_move_is_not_followed(tmp_path):
    _project(tmp_path, {"infer.py": """
        import torch
        from torch import nn


        class BigUNet(nn.Module):
            def __init__(self):
                super().__init__()
                self.label_emb = nn.Linear(4, 4)

            def forward(self, x, y):
                return x + self.label_emb(y)


        class SmallUNet(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(4, 4)

            def forward(self, x, y):
                return x + self.proj(y)


        class InferBig:
            def __init__(self, unet):
                self.delegate = unet

            def __getattr__(self, name):
                return getattr(self.delegate, name)

            def __call__(self, x, y):
                return self.delegate(x, y)


        class InferSmall(InferBig):
            pass


        def main(sdxl):
            device = "cuda"
            if sdxl:
                unet = InferBig(BigUNet())
            else:
                unet = InferSmall(SmallUNet())
            unet.to(device)
            x = torch.zeros(2, 4).to(device)
            return unet(x, torch.ones(2, 4).to(device))
    """})
    assert _codes(tmp_path, "infer.py") == []
