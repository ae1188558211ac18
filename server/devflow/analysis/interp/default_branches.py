"""The process-wide default device (`torch.set_default_tensor_type`, `torch.set_default_device`) across the
two branches of an `if` whose test is not known. The default is interpreter state, not a name in the frame,
so without this the branch run last wins: ML-Agents' `set_torch_config` sets the cuda tensor type when the
chosen device is cuda and the cpu one otherwise, and the else branch (cpu) was taken as the default after
the `if`, so device-less tensors looked cpu next to a model on the chosen device. Like names, each branch
starts from the default before the `if`. After it the default is the one both branches leave; when one
branch leaves an accelerator default, that one (what runs when that branch is taken: `if args.cuda:
set_default_tensor_type(cuda)` makes a shuffling DataLoader fail with --cuda); otherwise unknown."""

from __future__ import annotations

from devflow.analysis.lattice import TOP


class DefaultDeviceBranches:
    def __init__(self, interp):
        self.interp = interp
        self.before = (interp.default_dev, interp.default_origin)
        self.body = self.before

    def end_body(self) -> None:
        """The body ran: keep the default it left, and let the else branch start from the one before."""
        i = self.interp
        self.body = (i.default_dev, i.default_origin)
        i.default_dev, i.default_origin = self.before

    def finish(self, body_returns: bool, else_returns: bool) -> None:
        """After the else branch: the default of the branch that goes on, or the join of both."""
        i = self.interp
        if body_returns and else_returns:
            i.default_dev, i.default_origin = self.before
        elif else_returns:
            i.default_dev, i.default_origin = self.body
        elif not body_returns and not _same(self.body[0], i.default_dev):
            if _accelerator(self.body[0]):
                i.default_dev, i.default_origin = self.body
            elif not _accelerator(i.default_dev):
                i.default_dev, i.default_origin = TOP, i.default_origin or self.body[1]


def _accelerator(dev) -> bool:
    return dev is not None and dev.known and not dev.is_cpu


def _same(a, b) -> bool:
    return a is b or (a is not None and b is not None and a == b)
