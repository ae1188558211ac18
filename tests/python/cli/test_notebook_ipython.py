"""IPython syntax in notebook cells is read as the kernel reads it: the cell is then checked, not E999."""

from __future__ import annotations

import ast

import pytest

from devflow.api import check_source
from devflow.notebook import join_cells

BUG = (
    "import torch\n"
    "model = torch.nn.Linear(4, 2).to('cuda')\n"
    "model.head = torch.nn.Linear(2, 2)\n"
)

FORMS = {
    "shell": "!pip install torch\n",
    "shell_continued": "!pip install torch \\\n    transformers \\\n    peft\n",
    "shell_indented_in_block": "for i in range(2):\n    !echo {i}\n",
    "line_magic": "%matplotlib inline\n%time x = 1\n",
    "line_magic_continued": "%env A=1 \\\n  B=2\n",
    "cell_magic": "%%bash\nif [ -d x ]; then echo ok; fi\nfor f in *.py; do echo $f; done\n",
    "cell_magic_after_blank": "\n%%capture out\nprint(1 +)\n",
    "help_suffix": "torch.zeros?\n",
    "help_double": "torch.zeros??\n",
    "help_prefix": "?torch.zeros\n",
    "shell_assign": "files = !ls *.pt\nprint(files)\n",
    "magic_assign": "t = %timeit -o sum(range(10))\nprint(t)\n",
    "tuple_assign": "a, b = !echo 1 2\n",
    "automagic_pip": "pip install transformers peft\n",
    "automagic_in_block": "if True:\n    pip install -q accelerate\n",
}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_form_is_checked_not_a_syntax_error(form):
    joined = join_cells([FORMS[form], BUG])
    ast.parse(joined.source)
    assert joined.source.count("\n") == FORMS[form].count("\n") + BUG.count("\n")  # lines kept: the cell map holds
    result = check_source(joined.source, "nb.ipynb")
    assert result.error is None
    assert [d.code for d in result.diagnostics] == ["DEV101"]
    assert result.diagnostics[0].span.line == joined.to_joined(1, 3)


def test_assigned_name_stays_bound():
    src = join_cells(["x = !ls\n"]).source
    tree = ast.parse(src)
    assert isinstance(tree.body[0], ast.Assign) and tree.body[0].targets[0].id == "x"


@pytest.mark.parametrize("python", [
    "x = a % b\n",
    "y = (\n    1\n)\n",
    's = """\n!not a command\n%not a magic\n"""\n',
    "q = 'why?'\n",
    "z = f(a,\n      b)  # really?\n",
    "w = x != 1\n",
    "time = 5\n",
    "pip.main(['install', 'x'])\n",
    "env = {'a': 1}\n",
])
def test_python_is_left_alone(python):
    assert join_cells([python]).source == python


def test_command_inside_string_continuation_is_not_touched():
    cell = 'msg = """\n!rm -rf /\n"""\n!echo done\n'
    out = join_cells([cell]).source
    assert "!rm -rf /" in out and out.splitlines()[1] == "!rm -rf /"
    assert out.splitlines()[3].startswith("pass")
