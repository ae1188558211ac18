"""Work handed to a thread: `ThreadPoolExecutor().submit(fn, *args)` and
`asyncio.to_thread(fn, *args)` call `fn(*args)` in another thread of the same process (same devices, same
objects), and the future / coroutine they return gives what `fn` returned (`fut.result()`,
`await asyncio.wrap_future(fut)`, `await asyncio.to_thread(...)`). An inference server's request handler
that submits the model call to a pool runs it as surely as a direct call. Process pools are left out
(another process, pickled copies)."""

from __future__ import annotations

from devflow.analysis.values import UNKNOWN, Obj, Val

THREAD_POOLS = ("concurrent.futures.ThreadPoolExecutor", "concurrent.futures.thread.ThreadPoolExecutor")
RUN_IN_THREAD = ("asyncio.to_thread",)  # (fn, *args)
FUTURE_WRAPPERS = ("asyncio.wrap_future", "asyncio.ensure_future")  # (future): awaiting it gives its result


class Threads:
    def thread_call(self, node, q: str, args, kwargs, frame) -> Val | None:
        """The library calls above; None for any other."""
        if q in THREAD_POOLS:
            return Val("obj", obj=Obj("executor", qual=q))
        if q in RUN_IN_THREAD and args:
            return self.run_in_thread(node, args[0], args[1:], kwargs, frame)
        if q in FUTURE_WRAPPERS and args and _is_future(args[0]):
            return args[0]
        return None

    def executor_method(self, node, r: Val, name: str, args, kwargs, frame) -> Val:
        if r.obj.kind == "executor" and name == "submit" and args:
            return self.run_in_thread(node, args[0], args[1:], kwargs, frame)
        if r.obj.kind == "future" and name == "result":
            return r.obj.items[0]
        return UNKNOWN

    def run_in_thread(self, node, fn: Val, args, kwargs, frame) -> Val:
        if fn.kind not in ("func", "method", "module", "partial"):
            return UNKNOWN
        result = self.call(node, fn, fn.bound, list(args), dict(kwargs), frame)
        return Val("obj", obj=Obj("future", items=[result]))


def _is_future(v: Val) -> bool:
    return v.kind == "obj" and v.obj is not None and v.obj.kind == "future"


def awaited(v: Val) -> Val:
    """`await fut`: the result a future from a thread gives; any other awaitable is its own value here."""
    return v.obj.items[0] if _is_future(v) else v
