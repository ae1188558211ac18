"""Names a function declares `global` and assigns inside the branches of an `if`: Python writes them to the
module's namespace, so each branch must start from the values before the `if` and the names hold either
branch's value after it, as local names do (`frame.env` is branched the same way in `s_If`). Without this the
branch run last wins: `main()` with `global model, vocoder` setting `vocoder = build(); vocoder.cuda()` on one
branch and `vocoder = None` on the other left the module-level name None after the `if`."""

from __future__ import annotations

_ABSENT = object()


class GlobalBranches:
    """The module-level values of a frame's `global` names across one `if` (None: the frame declares none)."""

    def __init__(self, interp, frame):
        self.interp = interp
        self.frame = frame
        self.env = interp.module_frame.env
        self.names = sorted(frame.global_names)
        self.before = self._now()
        self.body: dict = {}

    @classmethod
    def start(cls, interp, frame) -> "GlobalBranches | None":
        if frame is interp.module_frame or not frame.global_names:
            return None
        return cls(interp, frame)

    def _now(self) -> dict:
        return {n: self.env.get(n, _ABSENT) for n in self.names}

    def _set(self, values: dict) -> None:
        for n, v in values.items():
            if v is _ABSENT:
                self.env.pop(n, None)
            else:
                self.env[n] = v

    def _rebind(self) -> None:
        """After the `if`: the run's binding of each name is the value it holds now (either branch's)."""
        view = self.interp.global_view
        for n in self.names:
            v = self.env.get(n, _ABSENT)
            if v is not _ABSENT and view.runs.get(n) is self.frame:
                view.bound(n, 0, v, run=self.frame)

    def end_body(self) -> None:
        """The body ran: keep what it wrote, and let the else branch start from the values before the `if`."""
        self.body = self._now()
        self._set(self.before)

    def finish(self, t_body: bool, t_else: bool) -> None:
        """Both branches ran (the else one last, its writes in place): the values after the `if`."""
        if t_body and t_else:
            self._set(self.before)
        elif t_else:
            self._set(self.body)
        elif not t_body:
            els = self._now()
            present = lambda d: {n: v for n, v in d.items() if v is not _ABSENT}  # noqa: E731
            self._set(self.interp.join_env(present(self.body), present(els)))
        self._rebind()
