"""Bounded runs.

--max-steps N: the first N optimizer steps run; later ones leave the parameters as they are (their
gradients are dropped before the step, so every optimizer skips them), which keeps the script's
own flow - the rest of the training loop, the evaluation and checkpoint code after it - running
on cheap no-op steps. A script that goes on stepping is stopped after HARD_FACTOR x N step calls.
--timeout: wall time, then the script is stopped.

Stops are a BaseException, so `except Exception` in the user's code does not swallow them."""

from __future__ import annotations

import signal
import threading

HARD_FACTOR = 25


class StopDryRun(BaseException):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class Limits:
    def __init__(self, max_steps: int | None, timeout: float | None):
        self.max_steps = max_steps
        self.timeout = timeout
        self.steps = 0       # optimizer.step() calls
        self.skipped = 0     # of which past --max-steps (no update)

    def install(self):
        import torch.optim.optimizer as opt

        # counted without a limit too: the summary says how many steps ran
        opt.register_optimizer_step_pre_hook(self._before_step)
        opt.register_optimizer_step_post_hook(self._after_step)
        if self.timeout and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGALRM, self._on_alarm)
            signal.setitimer(signal.ITIMER_REAL, self.timeout)

    def _before_step(self, optimizer, args, kwargs):
        if self.max_steps and self.steps >= self.max_steps:
            self.skipped += 1
            for group in optimizer.param_groups:
                for p in group["params"]:
                    p.grad = None
        return None

    def _after_step(self, optimizer, args, kwargs):
        self.steps += 1
        if self.max_steps and self.steps >= self.max_steps * HARD_FACTOR:
            raise StopDryRun(f"max-steps: stopped at the {self.steps}th optimizer step (steps after the first "
                             f"{self.max_steps} are skipped; the script kept stepping)")

    def _on_alarm(self, signum, frame):
        raise StopDryRun(f"timeout: stopped after {self.timeout:g} s")

    def cancel(self):
        if self.timeout and threading.current_thread() is threading.main_thread():
            signal.setitimer(signal.ITIMER_REAL, 0)
