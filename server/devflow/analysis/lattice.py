"""The device lattice: cpu, cuda / cuda:N, mps, meta, symbolic devices and unknown (top).

`None` is bottom (no value yet). A symbolic device stands for "the value of `device`" (or
`self.device`, `args.device`, `x.device` ...): two symbolic devices are equal only when they come
from the same definition (`key`). `accel` marks a symbolic device the code clearly means as the
accelerator ("cuda" if available else "cpu", a `device` argument): a cpu tensor meeting it is a
bug on every machine that has a GPU. Its `index`, when set, is the GPU it names there ("cuda:1" if
available else "cpu").

CUDA devices (see `interp/multigpu.py`): `Dev("cuda")` is the *current* device (what a bare "cuda"
or `.cuda()` means: `torch.cuda.set_device`, cuda:0 by default). `key=ANY_INDEX` is some cuda device
whose index is not known (`f"cuda:{i}"`, a join of two cuda devices). `key=("rank", cur)` is the GPU
of this process's rank (`cuda:{local_rank}`): different in each process of a multi-process run, so
it differs from any fixed index on some process, and from the current device when the program never
sets it (`cur` = 0; None when the program does set it: then it is unknown how they relate).
"""

from __future__ import annotations

from contextvars import ContextVar

# Whether the analysed program leaves the current CUDA device at its default, cuda:0 (nothing calls
# `torch.cuda.set_device`, no framework that sets it per process is imported): a callable the
# interpreter sets for its run, asked lazily (imports load as the run goes). Unset: unknown, and a
# bare "cuda" is never said to differ from a fixed index.
CURRENT_IS_DEFAULT: ContextVar = ContextVar("CURRENT_IS_DEFAULT", default=None)


class Dev:
    __slots__ = ("kind", "index", "key", "text", "accel", "gpu")

    def __init__(self, kind: str, index: int | None = None, key=None, text: str = "", accel: bool = False,
                 gpu: "Dev | None" = None):
        self.kind = kind  # "cpu" | "cuda" | "mps" | "meta" | "sym" | "top"
        self.index = index
        self.key = key
        self.text = text
        self.accel = accel
        # a device chosen between the cpu and a GPU (`f"cuda:{rank}" if available else "cpu"`): the GPU it is where
        # CUDA is available (not part of its identity)
        self.gpu = gpu

    def __repr__(self) -> str:
        return f"Dev({self.render()})"

    def named(self, text: str) -> "Dev":
        """The same device under another name (a symbolic device bound to a variable)."""
        return Dev(self.kind, self.index, self.key, text, self.accel, self.gpu)

    def __eq__(self, other) -> bool:
        if not isinstance(other, Dev):
            return NotImplemented
        if self.kind != other.kind:
            return False
        if self.kind == "sym":
            return self.key == other.key
        return self.index == other.index and self.key == other.key

    def __hash__(self) -> int:
        return hash((self.kind, self.key if self.kind == "sym" else (self.index, self.key)))

    @property
    def is_rank(self) -> bool:
        """The GPU of this process's rank (`cuda:{local_rank}`)."""
        return isinstance(self.key, tuple) and self.key[:1] == ("rank",)

    @property
    def known(self) -> bool:
        return self.kind != "top"

    @property
    def is_cpu(self) -> bool:
        return self.kind == "cpu"

    def render(self) -> str:
        if self.is_rank and self.text:
            return self.text
        if self.kind == "sym":
            gpu = f" (cuda:{self.index})" if self.index is not None else ""
            return f"`{self.text}`{gpu}" if self.text else "an accelerator"
        if self.kind == "top":
            return "unknown"
        if self.index is not None:
            return f"{self.kind}:{self.index}"
        return self.kind

    def source_text(self) -> str | None:
        """A Python expression denoting this device (for fixes), or None."""
        if self.kind == "sym":
            return self.text or None
        if self.kind == "top":
            return None
        if self.is_rank or self.key == ANY_INDEX:
            return None
        return repr(self.render())


ANY_INDEX = "any-index"
TOP = Dev("top")
CPU = Dev("cpu")
CUDA = Dev("cuda")
META = Dev("meta")
MPS = Dev("mps")


def concrete(text: str) -> Dev | None:
    """Parse a device string: "cpu", "cuda", "cuda:1", "mps", "meta"."""
    t = text.strip()
    kind, _, idx = t.partition(":")
    if kind not in ("cpu", "cuda", "mps", "meta", "xpu", "npu"):
        return None
    if idx:
        if not idx.isdigit():
            return None
        return Dev(kind, int(idx))
    return Dev(kind)


def join(a: Dev | None, b: Dev | None) -> Dev | None:
    if a is None:
        return b
    if b is None:
        return a
    if a == b:
        return a
    if a.kind == b.kind == "cuda":
        return Dev("cuda", key=ANY_INDEX)  # two different cuda devices: some cuda device
    return TOP


def _chosen_bare_cuda(d: Dev) -> bool:
    """A device chosen by a conditional expression between a bare "cuda" and a non-cuda device."""
    key = d.key
    return d.accel and d.index is None and isinstance(key, tuple) and len(key) == 4 and key[0] == "ifexp" \
        and key[3] == "cuda"


def definitely_differ(a: Dev | None, b: Dev | None) -> bool:
    """True when two devices are known and can never be the same at run time (on a GPU machine)."""
    if a is None or b is None or a.kind == "top" or b.kind == "top":
        return False
    if a.kind == "sym" or b.kind == "sym":
        if a.kind == "sym" and b.kind == "sym":
            return False
        sym, other = (a, b) if a.kind == "sym" else (b, a)
        if sym.accel and sym.gpu is not None and sym.gpu.is_rank and other.kind == "cuda":
            # `f"cuda:{local_rank}" if available else "cpu"`: the rank's GPU wherever there is one
            return definitely_differ(sym.gpu, other)
        if sym.accel and sym.index is not None and other.kind == "cuda":
            # `"cuda:1" if available else "cpu"`: that GPU wherever there is one
            return definitely_differ(Dev("cuda", sym.index), other)
        if _chosen_bare_cuda(sym) and other.kind == "cuda" and other.index is not None:
            # `"cuda" if available else "cpu"` (or "mps"): the current GPU where there is one, another
            # device elsewhere; neither is a fixed other GPU (`cuda:1`) while the program never sets the current one
            return definitely_differ(CUDA, other)
        # An accelerator-intended device differs from cpu; it may equal any concrete accelerator.
        return sym.accel and other.kind == "cpu"
    if a.kind != b.kind:
        return True
    if a.key == ANY_INDEX or b.key == ANY_INDEX:
        return False
    if a.is_rank or b.is_rank:
        if a.is_rank and b.is_rank:
            # a machine's local rank and the job's global rank: the same GPU index only on the first node
            return len(a.key) > 2 and len(b.key) > 2 and a.key[2] != b.key[2]
        rank, other = (a, b) if a.is_rank else (b, a)
        if other.index is not None:
            return True  # a fixed GPU: another one in every process but one
        return rank.key[1] is not None  # the current device, never set: cuda:0 in every process
    if a.index is not None and b.index is not None:
        return a.index != b.index
    if a.kind == "cuda" and a.key is None and b.key is None and (a.index is None) != (b.index is None):
        # the current device (bare "cuda") and a fixed index: cuda:0 when the program never sets it
        fixed = a if a.index is not None else b
        ask = CURRENT_IS_DEFAULT.get()
        return fixed.index != 0 and ask is not None and bool(ask())
    return False
