"""The token-embedding table of a transformers model and index lookups.

`get_input_embeddings()` exists only on transformers' `PreTrainedModel`, so calling it on an attribute of a library
model (`model.model.get_input_embeddings()`, the base model a causal-LM head wraps) reaches a submodule of that
model: the table sits where the model was placed. Under `device_map` accelerate places the model's first layer,
the input embeddings, on the first device: the table is "placed by accelerate" like the model (DEV502).

An embedding lookup (`nn.Embedding` / `nn.EmbeddingBag`, whose forward is `F.embedding` -> `index_select`) takes
its indices on the table's device whatever their dims: the 0-dim cpu tensor that mixes with any device in an
element-wise op is no exception there (`emb(torch.tensor(pad_id))` on a cuda table raises "... cpu and cuda:0!
(when checking argument for argument index in method wrapper__index_select)", graphprompter#6)."""
from __future__ import annotations

from devflow.analysis.values import Obj

# torch's lookup modules: their forward indexes the weight with the input (index_select), no element-wise op
_LOOKUPS = ("torch.nn.Embedding", "torch.nn.EmbeddingBag", "torch.nn.modules.sparse.Embedding",
            "torch.nn.modules.sparse.EmbeddingBag")


def is_index_lookup(obj: Obj | None) -> bool:
    return obj is not None and obj.cls is None and obj.qual in _LOOKUPS


def input_embeddings_of(model: Obj) -> Obj:
    """The module `model.get_input_embeddings()` returns: on the model's device, or placed by accelerate."""
    table = Obj("module", qual="torch.nn.Embedding", dev=model.dev, origin=model.origin, moved=model.moved)
    table.dispatched = model.dispatched
    return table


def library_submodule_root(r) -> Obj | None:
    """`model.model` (an attribute the engine does not model) of a library model: the model it belongs to."""
    obj = getattr(r, "obj", None)
    return obj if r.kind == "attr" and obj is not None and obj.kind == "module" and obj.cls is None else None
