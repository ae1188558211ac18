"""Frameworks users run around torch, modelled from generated knowledge (analysis/framework_api.py):

- `entries`: code a framework calls for the user with tensors on the model's device: Lightning's
  step hooks (the Trainer moved the module and the batch), transformers generate()'s logits
  processors and stopping criteria; hooks that run before Lightning's transfer see the cpu batch.
- `distributions`: torch.distributions objects carry the device of their parameters.
- `rng`: a `torch.Generator` is on one device; drawing a tensor on another device with it fails.
- `rnn`: pack_padded_sequence's lengths must be on the cpu; a module input used only on the cpu
  (or only moved) does not meet the module's device.
- `tracing`: torch.jit.trace bakes the devices of tensors built at trace time into the graph; torch's
  methods that trace a model on example inputs (`SummaryWriter.add_graph`) run it on them.
- `accelerate`: what accelerate's `Accelerator.prepare()` places (modules, DataLoaders) and what it
  returns as it is.
- `autograd`: a torch.autograd.Function's backward sees what forward saved and gradients on the
  outputs' devices.
- `transforms`: torchvision's image transforms make tensors on the cpu from host images (PIL).
- `graphs`: a graph dataset's items (torch_geometric) are graphs built on the cpu, fields and all.
- `threads`: a thread pool's `submit(fn, *args)` / `asyncio.to_thread` run `fn(*args)`; the future gives its result.
- `factories`: library functions building models (on their `device=` or the default device), image
  preprocessing, tokenizers and tensors that users then place and feed (`open_clip.create_model_and_transforms`).
- `callbacks`: transformers' own logits processors that keep a tensor on their `device` argument
  (default cpu) fail when called with tensors on another device.
"""

from __future__ import annotations

from devflow.analysis import framework_api as F
from devflow.analysis.values import UNKNOWN, Obj, Val
from devflow.analysis.interp.frameworks.accelerate import Accelerators
from devflow.analysis.interp.frameworks.autograd import AutogradFunctions
from devflow.analysis.interp.frameworks.callbacks import LibraryCallbacks
from devflow.analysis.interp.frameworks.distributions import Distributions
from devflow.analysis.interp.frameworks.entries import Entries
from devflow.analysis.interp.frameworks.factories import LibraryFactories
from devflow.analysis.interp.frameworks.graphs import GraphData
from devflow.analysis.interp.frameworks.rng import Generators
from devflow.analysis.interp.frameworks.rnn import PackedSequences
from devflow.analysis.interp.frameworks.unittest_entries import UnittestEntries
from devflow.analysis.interp.frameworks.threads import Threads
from devflow.analysis.interp.frameworks.tracing import Tracing
from devflow.analysis.interp.frameworks.transforms import ImageTransforms


class Frameworks(Entries, Distributions, Generators, PackedSequences, Tracing, AutogradFunctions, Accelerators,
                 LibraryCallbacks, ImageTransforms, GraphData, Threads, LibraryFactories, UnittestEntries):
    """The interpreter's part for framework calls and framework-driven entry points."""

    def framework_call(self, node, q: str, args, kwargs, frame) -> Val | None:
        """A torch.* call a framework table decides (None: the ordinary torch call rules apply)."""
        rest = q[6:]
        last = rest.rsplit(".", 1)[-1]
        if rest == "Generator":
            return self.new_generator(node, args, kwargs)
        if rest in F.GENERATOR_SEEDING:
            return self.seeded_default_generator(node, rest)
        if "generator" in kwargs and rest in F.GENERATOR_FUNCTIONS:
            self.check_generator(node, rest, args, kwargs)
            return None
        if rest in F.GENERATOR_GIVEN_DRAWS and "generator" not in kwargs and "__opaque__" not in kwargs:
            self.check_default_generator_draw(node, rest)
        if "generator" in kwargs and rest in F.GENERATOR_DEFAULT_DRAWS:
            # only where the default device is never changed in the file (else DEV601's) and the generator's
            # device is a literal one (`torch.Generator("cuda" if use_cuda else "cpu")` follows the default)
            g = kwargs["generator"]
            if self.default_origin is None and self.default_dev is not None and self.default_dev.is_cpu \
                    and g.kind == "obj" and g.obj is not None and g.obj.dev is not None and g.obj.dev.kind != "sym":
                self.report_generator(node, g, self.default_dev, None)
            return None
        if rest.startswith("distributions.") and last in F.DISTRIBUTIONS:
            return self.new_distribution(node, last, args, kwargs, frame)
        if rest.startswith("distributions.") and last[:1].isupper() and \
                (composite := self.composite_distribution(node, last, args, kwargs)) is not None:
            return composite
        if rest.startswith("distributions.") and last in F.DIST_PAIR_FUNCTIONS:
            return self.distribution_pair(node, args, frame)
        if rest in F.CPU_LENGTHS:
            return self.pack_call(node, rest, args, kwargs, frame)
        if rest in F.TRACE_FUNCTIONS:
            return self.trace_call(node, args, kwargs, frame)
        if q in F.MODULE_RUNNERS:
            return Val("obj", obj=Obj("runner", qual=q))  # `SummaryWriter("runs")`: its add_graph runs a model
        if q in F.MODULE_RUNNER_FUNCTIONS:
            return self.run_module_runner(node, F.MODULE_RUNNER_FUNCTIONS[q], args, kwargs, frame)
        if F.TRACE_ARCHIVE and rest == F.TRACE_ARCHIVE["save"] and len(args) >= 2:
            self.trace_saved(args[0], args[1])
            return None
        if F.TRACE_ARCHIVE and rest == F.TRACE_ARCHIVE["load"]:
            return self.trace_loaded(node, args, kwargs)
        return None

    def framework_obj_method(self, node, r: Val, name: str, args, kwargs, frame) -> Val:
        if r.obj.kind == "generator":
            # manual_seed() returns the generator itself: `torch.Generator().manual_seed(0)`
            return r if name == "manual_seed" else UNKNOWN
        return self.distribution_method(node, r, name, args, kwargs, frame)
