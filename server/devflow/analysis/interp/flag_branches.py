"""Two tests of the same flag: what the first moved, the second's false branch sees unmoved.

`if use_cuda: features = features.cuda()` leaves `features` on the accelerator the flag picks (the
symbolic device `_moved_on_one_branch` gives it: an accelerator on a GPU run). A later
`if use_cuda: ... else: features.index_copy_(0, index.cpu(), feats.cpu())` tests the same flag: its
`else:` branch runs only where the flag is false, where the first `if` moved nothing, so there
`features` is on the cpu again (and the `if not use_cuda:` body likewise). The same holds for an
attribute moved on one branch (`if self.use_cuda: self.bank = self.bank.cuda()`): on the flag's false
branch it holds the value it had before the move. After `if use_cuda: return ...` (no `else:`), the rest of
the block is that false branch: names stay narrowed (only that path goes on), attributes (shared objects)
are as they were again when the block ends. An attribute moved where the flag is false
(`if not self.cpu_only: self.bank = self.bank.cuda()`) is likewise as it was on the branches where it is true.

A flag is a name or an attribute chain (`use_cuda`, `self.use_cuda`, `args.cuda`), optionally negated;
a bare name is the same flag only within one function body. Nothing else is narrowed: any other
condition, or a flag reassigned in between (not tracked; rare), keeps the values as they were.
"""

from __future__ import annotations

import ast

from devflow.analysis.lattice import CPU
from devflow.analysis.values import Origin, Val
from devflow.analysis.interp.frames import Frame, span_of


def flag_of(test: ast.expr) -> tuple[str, bool] | None:
    """(`use_cuda`, negated) for `use_cuda` / `not use_cuda` / `self.use_cuda`; None for any other test."""
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    node = test.operand if negated else test
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts)), negated


class FlagBranches:
    """Part of the Interpreter: the false branch of a flag's second test sees what the first moved unmoved."""

    def _flag_key(self, test: ast.expr, frame: Frame) -> tuple | None:
        f = flag_of(test)
        if f is None:
            return None
        text, negated = f
        scope = id(frame.node) if "." not in text else None  # a bare name: one function's local flag
        return (text, scope), negated

    def note_flag_move(self, st, dev_key, name: str, kept: Val, in_body: bool, frame: Frame) -> None:
        """A tensor name moved to the symbolic device `dev_key` (from `kept`) on the branch of `if <flag>:` where
        the flag is true (the body of `if flag:`, the `else:` of `if not flag:`)."""
        k = self._flag_key(st.test, frame)
        if k is not None and in_body != k[1]:
            self.__dict__.setdefault("flag_devs", {})[dev_key] = (k[0], st)
            self.__dict__.setdefault("flag_kept", {})[(dev_key, name)] = kept

    def note_flag_attr_moves(self, st, body_writes: list, else_writes: list, frame: Frame) -> None:
        """`if self.use_cuda: self.bank = self.bank.cuda()`: an attribute moved from a cpu tensor on one branch
        of a flag's test only; remembered by the value it holds after the `if`, with the value it had before
        and the flag's value where it was moved (`if not self.cpu_only: self.bank = self.bank.cuda()`: where
        the flag is false)."""
        k = self._flag_key(st.test, frame)
        if k is None:
            return
        for writes, other_writes, where in ((body_writes, else_writes, not k[1]), (else_writes, body_writes, k[1])):
            other = {(id(o), n) for o, n, *_ in other_writes}
            first: dict = {}
            for o, n, v, prior in writes:
                first.setdefault((id(o), n), (o, n, prior))
            for key, (o, n, prior) in first.items():
                now = o.attrs.get(n)
                if key in other or now is None or prior is None or now.kind != "tensor" or prior.kind != "tensor":
                    continue
                if prior.dev is None or not prior.dev.is_cpu or prior.scalar or now.dev is None or now.dev.is_cpu or \
                        not now.dev.known or now.origin is None or now.origin.kind != "placed":
                    continue
                self.__dict__.setdefault("flag_attrs", {})[id(now)] = (k[0], prior, now, where)

    def flag_false_branch(self, st, frame: Frame) -> tuple[bool, tuple] | None:
        """For `if <flag>:` whose flag moved values before: (whether the branch where it is false is the body,
        the flag); None for any other test."""
        devs, attrs = self.__dict__.get("flag_devs"), self.__dict__.get("flag_attrs")
        if not devs and not attrs:
            return None
        k = self._flag_key(st.test, frame)
        if k is None:
            return None
        flag, negated = k
        if not any(d[0] == flag for d in (devs or {}).values()) and not any(a[0] == flag for a in (attrs or {}).values()):
            return None
        return negated, flag

    def unmove_for_flag(self, flag, st, frame: Frame, where: bool = False) -> list:
        """On a branch where the flag is `where`: (false) names on the flag's accelerator are on the cpu;
        attributes moved where the flag had the other value hold their earlier value. Returns what to undo
        after the branch (`redo_after_flag`)."""
        devs, attrs = self.__dict__.get("flag_devs") or {}, self.__dict__.get("flag_attrs") or {}
        kept = self.__dict__.get("flag_kept") or {}
        undo = []
        for name, v in (list(frame.env.items()) if not where else ()):
            d = devs.get(v.dev.key) if v.kind == "tensor" and v.dev is not None and v.dev.kind == "sym" else None
            if d is not None and d[0] == flag:
                cpu = kept.get((v.dev.key, name))
                if cpu is None:  # derived from a moved tensor (`normalize(features)`): on the cpu with it
                    first = d[1]
                    why = Origin(span_of(first.test), f"not moved: `{self.text(st.test)}` is false at line {st.lineno} "
                                                      f"(moved only when `{self.text(first.test)}`, line {first.lineno})")
                    cpu = Val("tensor", CPU, why, text=v.text, scalar=v.scalar, batch=v.batch, dims=v.dims)
                frame.env[name] = cpu
                undo.append((None, name, cpu, v))
        if attrs:
            for v in list(frame.env.values()):
                obj = v.obj if v.kind in ("module", "obj") else None
                if obj is None:
                    continue
                for n, now in list(obj.attrs.items()):
                    hit = attrs.get(id(now))
                    if hit is not None and hit[0] == flag and hit[2] is now and hit[3] != where:
                        obj.attrs[n] = hit[1]
                        undo.append((obj, n, hit[1], now))
        return undo

    @staticmethod
    def redo_after_flag(undo: list, frame: Frame) -> None:
        """After the flag's false branch: what the branch did not rewrite is as it was before the `if`."""
        for obj, n, narrowed, was in undo:
            holder = frame.env if obj is None else obj.attrs
            if holder.get(n) is narrowed:
                holder[n] = was

    def flag_tail(self, undo: list) -> None:
        """Narrowed attributes that stay so for the rest of the enclosing block (`exec_block` ends them)."""
        tails = self.__dict__.setdefault("flag_tails", [])
        tails.extend(u for u in undo if u[0] is not None)  # (names stay narrowed: only the false path goes on)

    def end_flag_tails(self, mark: int, frame: Frame) -> None:
        tails = self.flag_tails
        if len(tails) > mark:
            self.redo_after_flag(tails[mark:], frame)
            del tails[mark:]
