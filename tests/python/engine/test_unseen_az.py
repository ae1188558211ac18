"""Semantics found missing on unseen real cases, batch AZ (tests/fixtures/engine/unseen/az_*): language and
speech models (tokenizers, embedders, retrieval, generation loops, TTS inference).

- Every instance of a plain class has been through its `__init__`: a method that nobody in the project calls
  (a library's embedder, reached only from another service) can run right after construction, so it sees
  what `__init__` stored on `self`, whatever the constructor's arguments. `__init__` runs on the method's own
  `self` first, with unknown arguments and its calls not followed: a model moved in `__init__` to
  `torch.device("cuda" if torch.cuda.is_available() else "cpu")` is on the accelerator, and the tokenizer's cpu
  output that the method feeds it mixes devices (code-kern-ai/embedders#5, DEV202). What `__init__` builds
  from its parameters (`self.device = device`) stays unknown, and an nn.Module keeps its own rule (its
  forward on its own sees "the module's device"). Nor when a program importing the file sets the process-wide
  default device: the method's own device-less tensors are on that default then.
- A function defined in the body being run and called there (`def get_device(): ...` inside `__init__`, Verba's
  MiniLMEmbedder) is that body's own code: a body checked on its own follows it as if inlined, whatever tests
  it makes, while calls to other functions stay unfollowed there (weaviate/Verba#61, DEV202).
- An attribute moved where a flag is false (`if not self.cpu_only: self.bank = self.bank.cuda()`) holds its
  earlier value on the branches where the flag is true (`if self.cpu_only: ...`, or after
  `if not self.cpu_only: return`), as one moved where the flag is true does where it is false: with the state
  `__init__` leaves, a method that tests the flag again sees the cpu bank on the cpu-only branch."""

from __future__ import annotations

from project_fixtures import codes as _codes, write_project as _project


_EMBEDDER = """
    import torch
    from transformers import AutoModel, AutoTokenizer


    class TokenEmbedder:
        def __init__(self, config_string: str):
            self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            self.tokenizer = AutoTokenizer.from_pretrained(config_string)
            self.model = AutoModel.from_pretrained(config_string, output_hidden_states=True).to(self.device)

        def embed(self, document: str):
            encoded = self.tokenizer(document, return_tensors="pt"){move}
            with torch.no_grad():
                output = self.model(**encoded)
            return output.hidden_states[-1].squeeze(0).tolist()
"""


def _embedder(move: str = "") -> str:
    return _EMBEDDER.replace("{move}", move)


def test_uncalled_method_sees_the_model_its_init_moved(tmp_path):
    _project(tmp_path, {"embedder.py": _embedder()})
    assert _codes(tmp_path, "embedder.py") == [(12, "DEV202")]


def test_renamed_and_split_over_a_base_class_in_another_file(tmp_path):
    _project(tmp_path, {
        "lib/__init__.py": "",
        "lib/base.py": """
            class Embedder:
                def __init__(self, batch_size):
                    self.batch_size = batch_size

                def transform(self, docs):
                    return [self.encode_one(d) for d in docs]
        """,
        "lib/contextual.py": """
            import torch
            from transformers import AutoModel, AutoTokenizer

            from lib.base import Embedder


            class ContextualEmbedder(Embedder):
                def __init__(self, name, batch_size=16):
                    super().__init__(batch_size)
                    self.dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
                    self.tok = AutoTokenizer.from_pretrained(name)
                    self.net = AutoModel.from_pretrained(name).to(self.dev)

                def encode_one(self, text):
                    batch = self.tok.encode_plus(text, return_tensors="pt")
                    return self.net(**batch).last_hidden_state.mean(1)
        """,
    })
    assert _codes(tmp_path, "lib/contextual.py") == [(15, "DEV202")]


def test_one_helper_deeper_in_the_init(tmp_path):
    _project(tmp_path, {"retriever.py": """
        import torch
        from transformers import AutoModel, AutoTokenizer


        class Retriever:
            def __init__(self, name):
                self.device = "cuda" if torch.cuda.is_available() else "cpu"
                self.tokenizer = AutoTokenizer.from_pretrained(name)
                self._load(name)

            def _load(self, name):
                self.encoder = AutoModel.from_pretrained(name).to(self.device)

            def query_vector(self, query):
                ids = torch.tensor([self.tokenizer.encode(query)])
                return self.encoder(ids).pooler_output
    """})
    # the helper that moves the encoder is a call in __init__: not followed on its own, nothing known
    assert _codes(tmp_path, "retriever.py") == []


def test_inside_a_trainer_class_that_evaluates_its_own_model(tmp_path):
    _project(tmp_path, {"trainer.py": """
        import torch
        import torch.nn.functional as F
        from transformers import AutoModelForSequenceClassification, AutoTokenizer


        class Trainer:
            def __init__(self, model_name, lr=1e-5):
                self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
                self.tokenizer = AutoTokenizer.from_pretrained(model_name)
                self.model = AutoModelForSequenceClassification.from_pretrained(model_name)
                self.model.to(self.device)
                self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=lr)

            def evaluate(self, texts, labels):
                batch = self.tokenizer(texts, padding=True, return_tensors="pt")
                logits = self.model(**batch).logits
                return F.cross_entropy(logits, torch.tensor(labels)).item()
    """})
    assert _codes(tmp_path, "trainer.py") == [(15, "DEV202")]


def test_inputs_moved_to_the_init_device_are_silent(tmp_path):
    _project(tmp_path, {"embedder.py": _embedder(".to(self.device)")})
    assert _codes(tmp_path, "embedder.py") == []


def test_device_given_to_the_constructor_is_unknown_and_silent(tmp_path):
    _project(tmp_path, {"embedder.py": _embedder().replace(
        "def __init__(self, config_string: str):", "def __init__(self, config_string: str, device='cuda'):").replace(
        'torch.device("cuda" if torch.cuda.is_available() else "cpu")', "device")})
    assert _codes(tmp_path, "embedder.py") == []


def test_importer_that_sets_the_default_device_keeps_it_silent(tmp_path):
    _project(tmp_path, {
        "dataset.py": """
            import torch


            class Dataset:
                def __init__(self, n):
                    self.device = torch.device("cuda")
                    self.poses = torch.eye(4).repeat(n, 1, 1).to(self.device)

                def random_rays(self, i, batch_size):
                    p = torch.rand(batch_size, 3)
                    return torch.matmul(self.poses[i, None, :3, :3], p[:, :, None])
        """,
        "runner.py": """
            import torch
            from dataset import Dataset

            torch.set_default_tensor_type("torch.cuda.FloatTensor")
            data = Dataset(10)
        """,
    })
    assert _codes(tmp_path, "dataset.py") == []


def test_model_left_on_the_cpu_by_init_is_silent(tmp_path):
    _project(tmp_path, {"embedder.py": _embedder().replace(".to(self.device)", "")})
    assert _codes(tmp_path, "embedder.py") == []


def test_method_that_moves_its_model_back_first_is_silent(tmp_path):
    _project(tmp_path, {"embedder.py": _embedder().replace(
        '            encoded = self.tokenizer(document, return_tensors="pt")',
        '            self.model = self.model.cpu()\n            encoded = self.tokenizer(document, return_tensors="pt")')})
    assert _codes(tmp_path, "embedder.py") == []


_STORE = """
    import torch


    class Store:
        def __init__(self, n, dim, cpu_only):
            self.cpu_only = cpu_only
            self.bank = torch.zeros(n, dim)
            if not self.cpu_only:
                self.bank = self.bank.cuda()

        def put(self, index, feats):
            if self.cpu_only:
                self.bank.index_copy_(0, {cpu_index}, feats)
            else:
                self.bank.index_copy_(0, index.cuda(), feats.cuda())
"""


def test_attribute_moved_where_the_flag_is_false_is_on_the_cpu_where_it_is_true(tmp_path):
    _project(tmp_path, {"store.py": _STORE.replace("{cpu_index}", "index.cuda()")})
    assert _codes(tmp_path, "store.py") == [(7, "DEV201")]


def test_attribute_moved_where_the_flag_is_false_and_cpu_index_there_is_silent(tmp_path):
    _project(tmp_path, {"store.py": _STORE.replace("{cpu_index}", "index.cpu()")})
    assert _codes(tmp_path, "store.py") == []


def test_after_an_early_return_where_the_flag_is_false(tmp_path):
    _project(tmp_path, {"memory.py": """
        import torch


        class Memory:
            def __init__(self, size, dim, cpu_only=False):
                self.cpu_only = cpu_only
                self.queue = torch.randn(size, dim)
                if self.cpu_only:
                    pass
                else:
                    self.queue = self.queue.cuda()

            def enqueue(self, keys, ptr):
                if not self.cpu_only:
                    self.queue[ptr:ptr + keys.size(0)] = keys.cuda()
                    return
                self.queue.index_copy_(0, torch.arange(ptr, ptr + keys.size(0)).cuda(), keys.cuda())
    """})
    assert _codes(tmp_path, "memory.py") == [(7, "DEV201")]


_MINILM = """
    class MiniLMEmbedder:
        def __init__(self):
            self.model = None
            try:
                import torch
                from transformers import AutoModel, AutoTokenizer

                def get_device():
                    if torch.cuda.is_available():
                        return torch.device("cuda")
                    elif torch.backends.mps.is_available():
                        return torch.device("mps")
                    else:
                        return torch.device("cpu")

                self.device = get_device()
                self.model = AutoModel.from_pretrained("sentence-transformers/all-MiniLM-L6-v2")
                self.tokenizer = AutoTokenizer.from_pretrained("sentence-transformers/all-MiniLM-L6-v2")
                self.model = self.model.to(self.device)
            except Exception:
                pass

        def vectorize_chunk(self, chunk):
            import torch

            inputs = self.tokenizer(chunk, return_tensors="pt", padding=True, truncation=True){move}
            with torch.no_grad():
                outputs = self.model(**inputs)
            return outputs.last_hidden_state.mean(dim=1).tolist()
"""


def test_device_helper_defined_inside_init_is_followed(tmp_path):
    _project(tmp_path, {"minilm.py": _MINILM.replace("{move}", "")})
    assert _codes(tmp_path, "minilm.py") == [(26, "DEV202")]


def test_device_helper_inside_init_with_inputs_moved_is_silent(tmp_path):
    _project(tmp_path, {"minilm.py": _MINILM.replace("{move}", ".to(self.device)")})
    assert _codes(tmp_path, "minilm.py") == []


def test_nested_helper_of_a_device_parameter_stays_unknown(tmp_path):
    _project(tmp_path, {"minilm.py": _MINILM.replace("def __init__(self):", "def __init__(self, device):").replace(
        'return torch.device("cuda")', "return device").replace("{move}", "")})
    assert _codes(tmp_path, "minilm.py") == []


def test_nested_helper_in_a_method_run_alone_split_in_a_package(tmp_path):
    _project(tmp_path, {
        "rag/__init__.py": "",
        "rag/encoders.py": """
            import torch
            from transformers import AutoModel, AutoTokenizer


            class QueryEncoder:
                def __init__(self, name):
                    self.name = name

                def encode(self, query):
                    def pick():
                        return "cuda" if torch.cuda.is_available() else "cpu"

                    model = AutoModel.from_pretrained(self.name).to(pick())
                    ids = AutoTokenizer.from_pretrained(self.name)(query, return_tensors="pt")["input_ids"]
                    return model(ids).pooler_output
        """,
    })
    assert _codes(tmp_path, "rag/encoders.py") == [(14, "DEV202")]
