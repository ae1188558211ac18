"""A statement a fix inserts reads only names bound where it goes (else the fix is dropped, the finding stays)."""

from __future__ import annotations

import ast

import pytest

from devflow.rules.fix_safety import names_bound

SRC = '''import torch


class P:
    def predict(self, images):
        out = []
        with torch.no_grad():
            for (x,) in images:
                x = x.to(self.device)
                out.append(self.model(x))
        return out


def later():
    return helper()


def helper():
    return 1
'''


@pytest.mark.parametrize("line, text, ok", [
    (7, "self.model.to(x.device)", False),  # above the loop that defines x: UnboundLocalError
    (10, "self.model.to(x.device)", True),
    (7, "self.model.to(self.device)", True),
    (6, "torch.zeros(3)", True),
    (6, "len(images)", True),
    (15, "helper()", True),  # a module-level function defined further down exists when later() runs
    (6, "undefined_name.to(x)", False),
    (6, "for p in images:\n    p.to(self.device)", True),  # names the inserted block binds itself
])
def test_names_bound(line, text, ok):
    assert names_bound(ast.parse(SRC), line, text) is ok


def test_a_fix_reading_an_unbound_name_is_not_offered():
    from devflow.engine import analyze

    src = '''import torch
import torch.nn as nn


def run(batches):
    net = nn.Linear(8, 2)
    with torch.no_grad():
        for b in batches:
            b = b.to("cuda")
            print(net(b))
'''
    result = analyze(src)
    dev106 = [d for d in result.diagnostics if d.code == "DEV106"]
    assert dev106
    for d in dev106:
        if d.fix is not None:
            inserted = [e for e in d.fix.edits if "net.to(" in e.new_text]
            assert all(e.span.line >= 10 for e in inserted), d.fix
