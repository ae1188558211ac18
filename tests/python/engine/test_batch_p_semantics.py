"""Semantics found missing by the unseen batch P (tests/fixtures/engine/unseen/p_*), each tested on the
variations a user writes (renamed, split into files, one helper deeper, inside a trainer class) and on
the neighbours that must stay silent:
- a property's setter runs on attribute assignment (`self.state_dict = torch.load(f)` with a
  `@state_dict.setter` that restores the optimizer): an optimizer restored there while the model is on the
  cpu, the model moved later by another method, is DEV302; reading the property runs its getter;
- `torch.cuda.FloatTensor if use_cuda else torch.FloatTensor` (a legacy tensor type chosen like a device)
  is the cuda type on the GPU path: calling it, or converting with `.type(T)`, makes a cuda tensor,
  also through a variable or an attribute that holds it;
- a module that holds no tensor (a loss without class weights, an activation) has no device: "moving" it
  changes nothing, so it never meets cpu tensors on the device it was sent to;
- a loop over a zip of unlike modules with an iterable of unknown length may not run at all;
- a module built around submodules already moved (a distillation wrapper around a student on the GPU) keeps
  the parameters its `__init__` creates on the cpu: where one meets an input it is DEV106 (move the
  wrapper), not a tensor made without device=."""

from __future__ import annotations

from project_fixtures import codes as _codes, write_project as _project


# ---- property setters
_TRAINER = """
    import torch


    class Trainer:
        def __init__(self, model, optimizer, path):
            self._model = model
            self.optimizer = optimizer
            self.state = torch.load(path)

        @property
        def state(self):
            return {"optimizer": self.optimizer.state_dict()}

        @state.setter
        def state(self, state):
            self.optimizer.load_state_dict(state["optimizer"])

        def fit(self, device):
            self._model.to(device)
            self.optimizer.step()
"""


def test_property_setter_restores_optimizer_before_a_later_move(tmp_path):
    _project(tmp_path, {"trainer.py": _TRAINER, "train.py": """
        import torch
        from torch import nn
        from trainer import Trainer

        model = nn.Linear(2, 2)
        opt = torch.optim.Adam(filter(lambda p: p.requires_grad, model.parameters()))
        Trainer(model, opt, "ck.pt").fit(torch.device("cuda"))
    """})
    assert _codes(tmp_path, "trainer.py") == [(16, "DEV302")]
    assert _codes(tmp_path, "train.py") == [(7, "DEV302")]


def test_property_setter_defined_in_a_base_class_one_helper_deeper(tmp_path):
    _project(tmp_path, {"base.py": """
        import torch


        class Checkpointed:
            @property
            def state_dict(self):
                return {"opt": self.opt.state_dict()}

            @state_dict.setter
            def state_dict(self, sd):
                self.opt.load_state_dict(sd["opt"])

            def restore(self, path):
                self.state_dict = torch.load(path)
    """, "run.py": """
        import torch
        from torch import nn
        from base import Checkpointed


        class Loop(Checkpointed):
            def __init__(self, net, path):
                self.net = net
                self.opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
                self.restore(path)

            def run(self):
                self.net.cuda()
                self.opt.step()


        Loop(nn.Linear(3, 3), "last.pt").run()
    """})
    assert _codes(tmp_path, "base.py") == [(11, "DEV302")]


def test_property_setter_silent_when_the_model_is_moved_first(tmp_path):
    _project(tmp_path, {"trainer.py": _TRAINER, "train.py": """
        import torch
        from torch import nn
        from trainer import Trainer

        device = torch.device("cuda")
        model = nn.Linear(2, 2).to(device)
        opt = torch.optim.Adam(model.parameters())
        Trainer(model, opt, "ck.pt").fit(device)
    """})
    assert _codes(tmp_path, "trainer.py") == []
    assert _codes(tmp_path, "train.py") == []


def test_property_read_runs_the_getter_not_the_setter(tmp_path):
    _project(tmp_path, {"m.py": """
        import torch
        from torch import nn


        class Box(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(2, 2)

            @property
            def weight(self):
                return self.lin.weight

            @weight.setter
            def weight(self, w):
                self.lin.weight = nn.Parameter(w.cpu())


        box = Box().cuda()
        y = box.weight @ torch.ones(2, 2, device="cuda")
    """})
    assert _codes(tmp_path, "m.py") == []


# ---- legacy tensor types chosen like a device
def test_legacy_type_chosen_by_cuda_available_called_on_an_unmoved_model(tmp_path):
    _project(tmp_path, {"agent.py": """
        import torch
        from torch import nn

        use_cuda = torch.cuda.is_available()
        FloatTensor = torch.cuda.FloatTensor if use_cuda else torch.FloatTensor


        def load(path):
            net = nn.Linear(4, 2)
            net.load_state_dict(torch.load(path))
            return net


        net = load("dqn.pt")
        q = net(FloatTensor([[0.0, 1.0, 2.0, 3.0]]))
    """})
    assert [c for _, c in _codes(tmp_path, "agent.py")] == ["DEV106"]


def test_legacy_type_held_on_an_attribute_of_a_batch_iterator_in_another_file(tmp_path):
    _project(tmp_path, {"batches.py": """
        import torch


        class Batches:
            def __init__(self, data):
                self.data = data
                self._type = torch.cuda.FloatTensor if torch.cuda.is_available() else torch.FloatTensor

            def __call__(self):
                for i in range(0, len(self.data), 2):
                    yield self._type(self.data[i:i + 2])
    """, "main.py": """
        from torch import nn
        from batches import Batches

        model = nn.Linear(3, 1)
        for x in Batches([[1.0, 2.0, 3.0]] * 4)():
            y = model(x)
    """})
    assert [c for _, c in _codes(tmp_path, "main.py")] == ["DEV106"]


def test_legacy_type_conversion_with_type(tmp_path):
    _project(tmp_path, {"run.py": """
        import torch
        from torch import nn

        dtype = torch.cuda.FloatTensor if torch.cuda.is_available() else torch.FloatTensor
        model = nn.Linear(3, 1)
        state = torch.zeros(1, 3)
        out = model(state.type(dtype))
    """})
    assert [c for _, c in _codes(tmp_path, "run.py")] == ["DEV106"]


def test_legacy_type_silent_when_the_model_is_moved_on_the_same_condition(tmp_path):
    _project(tmp_path, {"run.py": """
        import torch
        from torch import nn

        use_cuda = torch.cuda.is_available()
        FloatTensor = torch.cuda.FloatTensor if use_cuda else torch.FloatTensor
        model = nn.Linear(3, 1)
        if use_cuda:
            model.cuda()
        out = model(FloatTensor([[1.0, 2.0, 3.0]]))
    """})
    assert _codes(tmp_path, "run.py") == []


def test_unrelated_legacy_types_stay_unknown(tmp_path):
    _project(tmp_path, {"run.py": """
        import torch
        from torch import nn

        T = torch.cuda.LongTensor if torch.cuda.is_available() else torch.FloatTensor
        model = nn.Linear(3, 1)
        out = model(T([[1.0, 2.0, 3.0]]).float())
    """})
    assert _codes(tmp_path, "run.py") == []


# ---- modules that hold no tensor
def test_weightless_loss_moved_alone_meets_cpu_predictions_silently(tmp_path):
    _project(tmp_path, {"utils.py": """
        def get_device():
            import torch
            return "cuda" if torch.cuda.is_available() else "cpu"
    """, "train.py": """
        import torch
        from torch import nn
        from utils import get_device


        def evaluate(model, batches, criterion):
            for x, y in batches:
                loss = criterion(model(x), y)


        model = nn.Linear(4, 3)
        criterion = nn.CrossEntropyLoss().to(get_device())
        act = nn.ReLU().cuda()
        evaluate(model, [(torch.randn(2, 4), torch.tensor([0, 1]))], criterion)
        z = act(torch.randn(2, 4))
    """})
    assert _codes(tmp_path, "train.py") == []


def test_weighted_loss_moved_still_meets_cpu_predictions(tmp_path):
    _project(tmp_path, {"train.py": """
        import torch
        from torch import nn

        model = nn.Linear(4, 3)
        criterion = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 3.0])).to("cuda")
        loss = criterion(model(torch.randn(2, 4)), torch.tensor([0, 1]))
    """})
    assert _codes(tmp_path, "train.py") != []


# ---- loops over a zip that may not run
def test_zip_of_unlike_modules_with_an_iterable_of_unknown_length_may_not_run(tmp_path):
    _project(tmp_path, {"net.py": """
        import torch
        from torch import nn


        class Mixed(nn.Module):
            def __init__(self):
                super().__init__()
                self.ops = nn.ModuleList([nn.Identity(), nn.Conv2d(4, 4, 3, padding=1)])

            def forward(self, x, weights):
                out = 0
                for w, op in zip(weights, self.ops):
                    out = out + w * op(x)
                return out + torch.zeros(1, 4, 8, 8)


        m = Mixed().cuda()
        y = m(torch.randn(1, 4, 8, 8).cuda(), torch.ones(2).cuda())
    """})
    assert _codes(tmp_path, "net.py") == []


# ---- a wrapper built around moved submodules, its own parameters left on the cpu
_WRAPPER = """
    import torch
    from torch import nn


    class Distiller(nn.Module):
        def __init__(self, student, teacher, dim):
            super().__init__()
            self.student = student
            self.teacher = teacher
            self.token = nn.Parameter(torch.randn(1, dim))

        def forward(self, x):
            feats = self.student(x)
            tok = self.token.expand(feats.size(0), -1)
            return torch.cat((feats, tok), dim=1), self.teacher(x)
"""


def test_wrapper_parameter_of_an_unmoved_wrapper_around_moved_models(tmp_path):
    _project(tmp_path, {"distill.py": _WRAPPER, "train.py": """
        import torch
        from torch import nn
        from distill import Distiller

        device = torch.device("cuda")
        student = nn.Linear(8, 4).to(device)
        teacher = nn.Linear(8, 4).to(device)
        distiller = Distiller(student, teacher, 4)
        out = distiller(torch.randn(2, 8).to(device))
        print(out[0].shape)
    """})
    assert _codes(tmp_path, "distill.py") == [(15, "DEV106")]
    assert _codes(tmp_path, "train.py") == [(9, "DEV106")]


def test_wrapper_moved_as_a_whole_is_silent(tmp_path):
    _project(tmp_path, {"distill.py": _WRAPPER, "train.py": """
        import torch
        from torch import nn
        from distill import Distiller

        device = torch.device("cuda")
        student = nn.Linear(8, 4).to(device)
        distiller = Distiller(student, nn.Linear(8, 4), 4).to(device)
        out = distiller(torch.randn(2, 8).to(device))
    """})
    assert _codes(tmp_path, "distill.py") == []
    assert _codes(tmp_path, "train.py") == []
