"""Semantics found missing on unseen real cases, batch AX (tests/fixtures/engine/unseen/ax_*): graph and
scientific libraries and their users (PyG / DGL models, molecular and materials models).

- `zip(*rows)` transposes: rows that are all tuples of one known shape (`[self.store[i] for i in n_id]`, each
  `(src, dst, t, msg)`) give one column per position, so `src, dst, t, msg = list(zip(*rows))` binds each
  name to the column of its position (`torch.cat(t)` is the concatenation of the stored `t`s). Rows of unknown
  shape stay unknown.
- `module.eval()` is `module.train(False)`: a class overriding `train()` (PyG's TGNMemory flushes its message
  store into memory when it leaves training) runs its override. Without an override, eval() only sets the flag.
- A plain dict of tensors (or of tuples of tensors) kept on a module, like a plain list or a plain tensor
  attribute, is not moved by `.to()`: a message store filled on the cpu while the module was built
  (`{j: (i, i, i, msg) for j in range(num_nodes)}`, made in a reset helper run by `__init__`) stays there when
  the module is moved to the GPU, and where it meets what the moved module holds it is at fault (DEV105 where
  it is set, pytorch_geometric#8926). A store moved where it is read (`.to(self.device)`), a store rebuilt after
  the move, or a module never moved stay silent.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from devflow.api import check_path, check_source


def _codes(src: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics]


# --- zip(*rows) transposes rows of one known tuple shape ---------------------------------------------------

_ROWS = """
    import torch

    a = torch.zeros(3, device="cuda")
    b = torch.zeros(3)
    rows = [(a, b) for _ in range(4)]
    {UNPACK}
    print(torch.cat(firsts) + {USE})
"""


def test_columns_of_zipped_rows_keep_their_position():
    src = _ROWS.replace("{UNPACK}", "firsts, seconds = zip(*rows)").replace("{USE}", "torch.cat(seconds)")
    assert [c for _, c in _codes(src)] == ["DEV201"]


def test_list_of_the_transposition_too():
    src = _ROWS.replace("{UNPACK}", "firsts, seconds = list(zip(*rows))").replace("{USE}", "torch.cat(seconds)")
    assert [c for _, c in _codes(src)] == ["DEV201"]


def test_a_column_alone_is_one_device_and_clean():
    src = _ROWS.replace("{UNPACK}", "firsts, seconds = zip(*rows)").replace("{USE}", "torch.cat(firsts)")
    assert _codes(src) == []


def test_rows_of_unknown_shape_stay_silent():
    src = """
        import sys
        import torch

        rows = [tuple(sys.argv) for _ in range(3)]
        firsts, seconds = zip(*rows)
        print(torch.cat(firsts) + torch.zeros(3, device="cuda"))
    """
    assert _codes(src) == []


# --- eval() runs a train() override; a dict message store is left behind by .to() -------------------------

_MEMORY = """
    import torch
    import torch.nn as nn


    class TimeEncoder(nn.Module):
        def __init__(self, out_channels):
            super().__init__()
            self.lin = nn.Linear(1, out_channels)

        def forward(self, t):
            return self.lin(t.view(-1, 1)).cos()


    class Memory(nn.Module):
        def __init__(self, num_nodes, dim):
            super().__init__()
            self.num_nodes = num_nodes
            self.dim = dim
            self.time_enc = TimeEncoder(dim)
            self.register_buffer("last_update", torch.zeros(num_nodes, dtype=torch.long))
            self.reset_state()

        @property
        def device(self):
            return self.time_enc.lin.weight.device

        def reset_state(self):
            self._reset_store()

        def _reset_store(self):
            i = self.last_update.new_empty((0,), device=self.device)
            msg = torch.empty((0, self.dim), device=self.device)
            self.store = {j: (i, i, msg) for j in range(self.num_nodes)}

        def _compute_msg(self, n_id):
            data = [self.store[i] for i in n_id.tolist()]
            src, t, raw_msg = list(zip(*data))
            src = torch.cat(src, dim=0){MOVE}
            t = torch.cat(t, dim=0){MOVE}
            return t - self.last_update[src]

        def train(self, mode=True):
            if self.training and not mode:
                self._compute_msg(torch.arange(self.num_nodes, device=self.last_update.device))
                self._reset_store()
            super().train(mode)


    memory = Memory(10, 8)
    memory.to("cuda:0")
    memory.{CALL}
"""


def _memory(call="eval()", move=""):
    return _MEMORY.replace("{CALL}", call).replace("{MOVE}", move)


def test_eval_runs_the_train_override_and_meets_the_store_left_on_cpu():
    assert _codes(_memory()) == [(34, "DEV105")]


def test_train_false_the_same():
    assert _codes(_memory("train(False)")) == [(34, "DEV105")]


def test_store_moved_where_it_is_read_is_clean():
    assert _codes(_memory(move=".to(self.device)")) == []


def test_module_never_moved_is_clean():
    assert _codes(_memory().replace('    memory.to("cuda:0")\n', "")) == []


def test_store_rebuilt_after_the_move_is_clean():
    src = _memory().replace('    memory.to("cuda:0")\n', '    memory.to("cuda:0")\n    memory.reset_state()\n')
    assert _codes(src) == []


def test_eval_without_a_train_override_only_sets_the_flag():
    src = _memory().replace("        def train(self, mode=True):", "        def flush(self, mode=True):")
    assert _codes(src) == []


def test_moved_to_an_unknown_device_stays_silent():
    src = _memory().replace('memory.to("cuda:0")', "import sys\n    memory.to(sys.argv[1])")
    assert _codes(src) == []


def test_renamed_store_inside_a_trainer_class():
    src = _memory().replace("self.store", "self.pending_messages").replace(
        '    memory = Memory(10, 8)\n    memory.to("cuda:0")\n    memory.eval()\n',
        "    class Trainer:\n"
        "        def __init__(self, device):\n"
        "            self.memory = Memory(10, 8).to(device)\n\n"
        "        def evaluate(self):\n"
        "            self.memory.eval()\n\n\n"
        '    Trainer(torch.device("cuda")).evaluate()\n')
    assert [c for _, c in _codes(src)] == ["DEV105"]


def test_split_into_files_with_the_reset_one_helper_deeper(tmp_path: Path):
    lib, _ = textwrap.dedent(_memory()).split("memory = Memory(10, 8)")
    lib = lib.replace("        def _reset_store(self):\n",
                      "        def _reset_store(self):\n            self._fill()\n\n        def _fill(self):\n")
    (tmp_path / "tgn.py").write_text(lib)
    (tmp_path / "run.py").write_text(textwrap.dedent("""
        from tgn import Memory

        if __name__ == "__main__":
            memory = Memory(10, 8)
            memory.to("cuda:0")
            memory.eval()
    """))
    got = sorted((f, d.code) for f in ("tgn.py", "run.py") for d in check_path(str(tmp_path / f)).diagnostics)
    assert got and {c for _, c in got} == {"DEV105"} and ("tgn.py", "DEV105") in got
