"""`devflow check DIR` resolves the imports of project files from DIR, as the editor does from its
workspace folders: a repository with no pyproject.toml / setup.py / .git, whose `examples/train.py`
does `from lab import Net` (run from the repository, `python -m examples.train`), gets the findings
the package's code makes there. A file checked alone keeps resolving only from its own folders."""

from __future__ import annotations

import textwrap
from pathlib import Path


def _repo(root: Path) -> None:
    files = {
        "lab/__init__.py": "from lab.model import Net\n",
        "lab/model.py": """
            import torch
            import torch.nn as nn


            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 2)

                def forward(self, x):
                    return self.fc(x) + torch.ones(2)
        """,
        "examples/train.py": """
            import torch
            from lab import Net

            if __name__ == "__main__":
                net = Net().to("cuda")
                out = net(torch.rand(3, 4, device="cuda"))
        """,
    }
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip("\n"))


def test_folder_checked_is_where_imports_resolve(devflow, tmp_path):
    _repo(tmp_path)
    r = devflow("check", ".", cwd=tmp_path)
    assert "examples/train.py:6:11: DEV201" in r.out.replace("\\", "/"), r.out  # the call that runs the mix


def test_file_checked_alone_does_not_guess_the_folder_above(devflow, tmp_path):
    _repo(tmp_path)
    r = devflow("check", "examples/train.py", cwd=tmp_path)
    assert "train.py:6" not in r.out, r.out
