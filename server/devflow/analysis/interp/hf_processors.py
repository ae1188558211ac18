"""Hugging Face processors: a ProcessorMixin holds its preprocessing components (tokenizer, feature
extractor, image / video / audio processor) as attributes named after their modality. Each one is a
preprocessor like the processor itself: called with return_tensors="pt" it gives cpu tensors."""

from __future__ import annotations

from devflow.analysis import framework_api as FW
from devflow.analysis.values import Obj, Val


def sub_processor(obj: Obj, attr: str) -> Val | None:
    """`processor.feature_extractor` on a Hugging Face preprocessor: its component, else None (an audio
    tokenizer is a model; a tiktoken encoding has no components)."""
    if obj.kind != "tokenizer" or obj.qual in FW.TOKENIZER_CONSTRUCTORS or attr.startswith("_"):
        return None
    if any(m in attr for m in FW.PROCESSOR_MODELS) or not any(m in attr for m in FW.PROCESSOR_PREPROCESSING):
        return None
    return Val("obj", obj=Obj("tokenizer", qual=f"{obj.qual}.{attr}"))
