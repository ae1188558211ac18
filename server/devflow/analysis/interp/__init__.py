"""The abstract interpreter: runs a file's code over the device lattice, one pass per function body.

Module-level code runs first (with `if __name__ == "__main__":` taken); calls to functions, methods
and classes of the same file are followed with the callers' abstract arguments (depth-limited,
memoised). Functions never reached that way run once on their own with unknown arguments.
Whatever is unknown stays unknown and is never reported.

One class, `Interpreter`, composed of one part per concern (each a module of this package):
- `driver`: state of a run, entry points (module code, standalone functions), source text, hints.
- `statements`: statements and control flow, assignment targets, joins of branch environments.
- `expressions`: names, attributes, subscripts, containers, operators, truth, iteration.
- `calls`: call dispatch; same-file functions, methods and classes followed with bound arguments.
- `modules`: nn.Module objects (forward, moves, methods) and other heap objects' methods.
- `tensors`: tensor methods.
- `library`: torch / builtins / transformers / torchvision calls, from the `torch_api` tables.
- `reporting`: proven mixes turned into findings with fix plans.
- `multigpu`: the current CUDA device, per-process rank devices, DataParallel / DDP placement.
- `env_devices`: devices configured from the environment (an accelerator fallback), placeholder strings.
- `collectives`: torch.distributed process groups' backends and the tensors collectives are given.
- `records`: SimpleNamespace and namedtuple records; CUDA is available in the analysed world.
- `checkpoints`: cpu-mapped checkpoints and the fused optimizers restored from them.
- `units`: project files imported by the checked file (run once, names resolved, findings anchored).
- `import_effects`: an import whose module body sets process-wide torch state runs that body at the import.
- `operators`: operators on instances of project classes run their special methods (`__iadd__`, `__radd__`).
- `frameworks`: distributions, generators, packed sequences, jit.trace, Lightning / generate() hooks,
  thread pools.
- `grads`: torch.autograd.grad's gradients, each on its input's device.
- `loop_carry`: a loop body's second pass, from the state its first pass left, when that changed a name's device.
- `flag_branches`: the false branch of a flag's second test sees what its first test moved unmoved.
- `init_state`: a method checked on its own runs on an instance its class's `__init__` made.
- `frames`: call frames, function references and helpers shared by the parts.
"""

from __future__ import annotations

import ast

from devflow.analysis.interp import expressions, statements
from devflow.analysis.interp.calls import Calls
from devflow.analysis.interp.driver import Driver
from devflow.analysis.interp.expressions import Expressions
from devflow.analysis.interp.frames import Frame, FuncRef, span_of
from devflow.analysis.interp.flag_branches import FlagBranches
from devflow.analysis.interp.frameworks import Frameworks
from devflow.analysis.interp.grads import Gradients
from devflow.analysis.interp.import_effects import ImportEffects
from devflow.analysis.interp.init_state import InitState
from devflow.analysis.interp.library import Library
from devflow.analysis.interp.loop_carry import LoopCarry
from devflow.analysis.interp.metrics import Metrics
from devflow.analysis.interp.modules import Modules
from devflow.analysis.interp.checkpoints import Checkpoints
from devflow.analysis.interp.collectives import Collectives
from devflow.analysis.interp.multigpu import MultiGpu
from devflow.analysis.interp.operators import Operators
from devflow.analysis.interp.records import Records
from devflow.analysis.interp.reporting import Reporting
from devflow.analysis.interp.statements import Statements
from devflow.analysis.interp.tensors import Tensors
from devflow.analysis.interp.units import Units

__all__ = ["Interpreter", "Frame", "FuncRef", "span_of"]


class Interpreter(Driver, Units, Statements, Expressions, Calls, Modules, Tensors, Library, Frameworks, Reporting,
                  MultiGpu, Collectives, Metrics, Records, Checkpoints, FlagBranches, ImportEffects, Operators, Gradients, LoopCarry,
                  InitState):
    """Runs one file over the device lattice; `findings` and `hints` hold what it found."""


def _handlers(prefix: str, base: type) -> dict:
    """Handlers by node type, looked up once per node instead of by name (`"e_" + type(node).__name__`)."""
    return {t: getattr(Interpreter, prefix + t.__name__) for t in vars(ast).values()
            if isinstance(t, type) and issubclass(t, base) and hasattr(Interpreter, prefix + t.__name__)}


expressions.EXPR_HANDLERS.update(_handlers("e_", ast.expr))
statements.STMT_HANDLERS.update(_handlers("s_", ast.stmt))
