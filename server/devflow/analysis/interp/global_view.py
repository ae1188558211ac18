"""Which binding of a module-level name a function sees (field false alarm M13).

A function called from module level reads the globals live at that call: it runs then, over the
module frame as it is. A function the module never calls (a callback handed to a library, an entry
point run by a launcher, a method of a class used elsewhere) runs at some time after its definition:
a global it reads is any binding live from then on, so the value is the join of those bindings, and a
join of different objects or devices is unknown (silent). The same object moved in place
(`model = Net(); model = model.to(device)`) is one binding's object, so it keeps its final placement.

A `None` placeholder (`model = None` before a loader binds the model) is left out of the join: a
call that reads it fails whatever the devices.

The bindings are recorded per top-level statement of the checked file (its line orders them: module
code runs top to bottom, a loop or a branch is one statement); a binding made by a function with
`global x` counts from the top-level statement that called it, or from any time when no module code
runs. An imported project module has run to its end before any of its functions is called: its
functions read its final globals, as before. A call from module level is memoised with the values of
the globals its function reads (`global_reads`), so a call after a rebinding runs again.
"""

from __future__ import annotations

import ast
from bisect import bisect_right

from devflow.analysis.values import Val
from devflow.analysis.walk import walk
from devflow.analysis.interp import text_facts
from devflow.analysis.interp.text_facts import text_key

ANY_TIME = 1 << 60  # a binding made outside module code (a function run on its own): any time


class GlobalView:
    """The module-level bindings of the checked file in the order they were made."""

    __slots__ = ("history", "cache", "starts", "runs")

    def __init__(self, tree: ast.Module):
        self.history: dict[str, list[tuple[int, Val]]] = {}
        self.cache: dict[tuple[str, int], Val | None] = {}
        self.starts = [st.lineno for st in tree.body]  # top-level statements, in order
        self.runs: dict[str, object] = {}  # name -> the function run that made its last binding

    def bound(self, name: str, seq: int, val: Val, run=None) -> None:
        """A binding of `name`. `run`: the function run (its frame) that made it with `global name`. Another
        function sees the global only before or after a run, so a run's later binding replaces its earlier one
        (`_model = load(); _model = _model.cuda()` in a lazy loader leaves the moved model)."""
        entries = self.history.setdefault(name, [])
        if run is not None and entries and self.runs.get(name) is run:
            entries[-1] = (entries[-1][0], val)
        else:
            entries.append((seq, val))
        self.runs[name] = run
        if self.cache:
            self.cache = {k: v for k, v in self.cache.items() if k[0] != name}

    def finish(self, env: dict) -> None:
        """After module code: the final value of every recorded name is a binding too (branches and
        loops join their bindings into one the statements never assigned)."""
        for name, entries in self.history.items():
            final = env.get(name)
            if final is not None and final is not entries[-1][1]:
                entries.append((ANY_TIME - 1, final))

    def point_of(self, node: ast.AST) -> int:
        """The top-level statement (its line) that defines `node`: from there on it may run."""
        i = bisect_right(self.starts, node.lineno) - 1
        return self.starts[i] if i >= 0 else 0

    def since(self, name: str, point: int, join) -> Val | None:
        """The join of the bindings of `name` live at `point` or made after it (None: none recorded)."""
        key = (name, point)
        if key in self.cache:
            return self.cache[key]
        entries = self.history.get(name)
        out = None
        if entries:
            before = [s for s, _ in entries if s < point]
            live = max(before) if before else None
            seen = [v for s, v in entries if s >= point or s == live]
            # `model = None` until a loader binds it: a run that reads the None fails whatever the devices
            objects = [v for v in seen if not (v.kind == "const" and v.const is None)]
            for v in objects or seen:
                out = v if out is None else join(out, v)
        self.cache[key] = out
        return out


def seq_now(module_frame) -> int:
    """Where module code is now: the line of the top-level statement running, or any time."""
    stack = module_frame.stmt_stack
    return stack[0].lineno if stack else ANY_TIME


def global_reads(fn, cache: dict, lines: list[str] | None = None, first: int = 1) -> tuple[str, ...]:
    """Names `fn` reads and never binds itself (nested functions and lambdas included): the globals,
    builtins and closure names it depends on beyond its arguments. Cached per function node (`cache`:
    the run's, or the lasting facts of the project file that defines `fn`) and by its text (`lines`:
    those of its file, `first` the number of the first; text_facts) for the next run."""
    key = ("global-reads", id(fn))
    hit = cache.get(key)
    if hit is not None:
        return hit
    tkey = text_key("global-reads", fn, lines, first)
    out = text_facts.get(tkey)
    if out is None:
        loads, stores = set(), set()
        a = fn.args
        stores.update(x.arg for x in a.posonlyargs + a.args + a.kwonlyargs)
        stores.update(x.arg for x in (a.vararg, a.kwarg) if x is not None)
        for n in walk(fn):
            if type(n) is ast.Name:
                (loads if isinstance(n.ctx, ast.Load) else stores).add(n.id)
        out = tuple(sorted(loads - stores - {"self", "cls"}))
        text_facts.put(tkey, out)
    cache[key] = out
    return out
