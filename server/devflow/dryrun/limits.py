"""Bounded runs: --max-steps counts optimizer steps (every optimizer, GradScaler.step included),
--timeout is wall time. Both stop the script with a BaseException, so `except Exception` in the
user's code does not swallow them."""

from __future__ import annotations

import signal
import threading


class StopDryRun(BaseException):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class Limits:
    def __init__(self, max_steps: int | None, timeout: float | None):
        self.max_steps = max_steps
        self.timeout = timeout
        self.steps = 0

    def install(self):
        import torch.optim.optimizer as opt

        if self.max_steps:
            opt.register_optimizer_step_post_hook(self._after_step)
        if self.timeout and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGALRM, self._on_alarm)
            signal.setitimer(signal.ITIMER_REAL, self.timeout)

    def _after_step(self, optimizer, args, kwargs):
        self.steps += 1
        if self.max_steps and self.steps >= self.max_steps:
            raise StopDryRun(f"max-steps: stopped after {self.steps} optimizer step"
                             f"{'' if self.steps == 1 else 's'}")

    def _on_alarm(self, signum, frame):
        raise StopDryRun(f"timeout: stopped after {self.timeout:g} s")

    def cancel(self):
        if self.timeout and threading.current_thread() is threading.main_thread():
            signal.setitimer(signal.ITIMER_REAL, 0)
