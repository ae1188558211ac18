"""Semantics found missing by the unseen batch Z (model surgery and checkpoints, tests/fixtures/engine/unseen/z_*),
each tested on the variations a user writes (renamed, split into files, one helper deeper, inside a trainer
class) and on the neighbours that must stay silent:
- a head swapped by a trainer method after `__init__` moved the model: DEV102 at the call to that method,
  seen from the caller both share (before: no finding at the cause, only where an input met the head);
- a module built on the cpu and assigned onto a moved model is one finding (DEV101 / DEV102): its own
  submodules, and what it computes, do not report the same cause again further down the forward;
- `module.load_state_dict(sd, assign=True)` makes the module's tensors those of `sd`: a head rebuilt on
  the cpu that takes a moved head's `state_dict()` this way is on the model's device."""

from __future__ import annotations

from project_fixtures import codes as _codes, write_project as _project

HEADS = """
import torch
import torch.nn as nn


class ActionHead(nn.Module):
    def __init__(self, dim, horizon):
        super().__init__()
        self.horizon = horizon
        self.proj = nn.Linear(dim, dim)
        self.decode = nn.Linear(dim, 4)

    def forward(self, feats):
        steps = torch.zeros(feats.shape[0], self.horizon, 4, device=feats.device)
        return steps + self.decode(torch.relu(self.proj(feats)))[:, None]


class Policy(nn.Module):
    def __init__(self, dim=16, horizon=8):
        super().__init__()
        self.backbone = nn.Linear(8, dim)
        self.action_head = ActionHead(dim, horizon)

    @classmethod
    def from_pretrained(cls, path):
        model = cls()
        model.load_state_dict(torch.load(path, map_location="cpu"))
        return model

    def forward(self, obs):
        return self.action_head(self.backbone(obs))
"""

SERVER = """
import torch

from {pkg}.heads import ActionHead, Policy


class PolicyServer:
    def __init__(self, path, horizon, device="cuda"):
        self.device = device
        self._load(path, horizon)

    def _load(self, path, horizon):
        model = Policy.from_pretrained(path)
        model.to(device=self.device)
        if horizon != model.action_head.horizon:
            head = ActionHead(16, horizon)
            head.load_state_dict(model.action_head.state_dict(){assign})
            model.action_head = head
        self.model = model

    def act(self, obs):
        return self.model(torch.as_tensor(obs, dtype=torch.float32).to(self.device))
"""

RUN = """
from {pkg}.server import PolicyServer


def main():
    server = PolicyServer("policy.pt", horizon=4)
    print(server.act([[0.0] * 8]))


if __name__ == "__main__":
    main()
"""


def _policy_repo(root, pkg="robopolicy", script="scripts/serve.py", assign="", marker="pyproject.toml"):
    # an installable repository (its root marked): scripts/ import the installed package
    _project(root, {marker: "[project]\nname = 'policy'\n", f"{pkg}/__init__.py": "", f"{pkg}/heads.py": HEADS,
                    f"{pkg}/server.py": SERVER.format(pkg=pkg, assign=assign),
                    script: RUN.format(pkg=pkg)})


# ---- a package above the script; one finding for a head left on cpu
def test_head_swapped_after_move_found_from_a_script_folder(tmp_path):
    _policy_repo(tmp_path)
    assert _codes(tmp_path, "robopolicy/server.py") == [(17, "DEV101")]
    assert _codes(tmp_path, "scripts/serve.py") == [(5, "DEV101")]


def test_renamed_package_two_folders_below_with_setup_py(tmp_path):
    _policy_repo(tmp_path, pkg="gr00t_lite", script="tools/deploy/serve.py", marker="setup.py")
    assert _codes(tmp_path, "tools/deploy/serve.py") == [(5, "DEV101")]


def test_head_submodules_and_outputs_do_not_repeat_the_finding(tmp_path):
    _policy_repo(tmp_path)
    assert _codes(tmp_path, "robopolicy/heads.py") == []


def test_unmarked_folder_above_the_script_is_not_guessed(tmp_path):
    # no pyproject.toml / setup.py / .git: nothing says the folder above is on the path (batch k)
    _project(tmp_path, {"heads/__init__.py": HEADS, "scripts/serve.py": """
        import torch
        from heads import ActionHead, Policy

        model = Policy()
        model.to("cuda")
        model.action_head = ActionHead(16, 4)
        """})
    assert _codes(tmp_path, "scripts/serve.py") == []


# ---- load_state_dict(assign=True)
def test_assign_true_keeps_the_moved_heads_tensors(tmp_path):
    _policy_repo(tmp_path, assign=", assign=True")
    assert _codes(tmp_path, "robopolicy/server.py") == []
    assert _codes(tmp_path, "scripts/serve.py") == []


def test_assign_false_is_a_copy_into_the_cpu_head(tmp_path):
    _policy_repo(tmp_path, assign=", assign=False")
    assert _codes(tmp_path, "robopolicy/server.py") == [(17, "DEV101")]


def test_assign_true_from_a_checkpoint_of_unknown_placement_stays_silent(tmp_path):
    _project(tmp_path, {"heads.py": HEADS, "train.py": """
        import torch
        from heads import ActionHead, Policy

        def load_head(model, path):
            head = ActionHead(16, 4)
            head.load_state_dict(torch.load(path, map_location=None), assign=True)
            model.action_head = head

        model = Policy()
        model.to("cuda")
        load_head(model, "head.pt")
        print(model(torch.randn(2, 8, device="cuda")))
        """})
    assert _codes(tmp_path, "train.py") == []


def test_head_swapped_in_a_trainer_method_one_call_deeper(tmp_path):
    _project(tmp_path, {"heads.py": HEADS, "trainer.py": """
        import torch
        from heads import ActionHead, Policy

        class Trainer:
            def __init__(self, cfg):
                self.cfg = cfg
                self.device = torch.device(cfg["device"])
                self.model = Policy()
                self.model.to(self.device)

            def adapt_horizon(self, horizon):
                new_head = ActionHead(16, horizon)
                new_head.load_state_dict(self.model.action_head.state_dict(), strict=False)
                self.model.action_head = new_head

            def step(self, obs):
                return self.model(obs.to(self.device)).mean()

        trainer = Trainer({"device": "cuda"})
        trainer.adapt_horizon(4)
        trainer.step(torch.randn(2, 8))
        """})
    assert _codes(tmp_path, "trainer.py") == [(20, "DEV102")]


def test_model_moved_by_a_helper_then_head_swapped_by_the_caller(tmp_path):
    _project(tmp_path, {"heads.py": HEADS, "finetune.py": """
        import torch
        from heads import ActionHead, Policy

        def place(model, device):
            model.to(device)
            return model

        def main():
            model = place(Policy(), torch.device("cuda"))
            model.action_head = ActionHead(16, 4)
            print(model(torch.randn(2, 8, device="cuda")))

        main()
        """})
    assert _codes(tmp_path, "finetune.py") == [(10, "DEV101")]


def test_head_swapped_before_the_helper_moves_the_model_is_silent(tmp_path):
    _project(tmp_path, {"heads.py": HEADS, "finetune.py": """
        import torch
        from heads import ActionHead, Policy

        def place(model, device):
            model.to(device)
            return model

        def main():
            model = Policy()
            model.action_head = ActionHead(16, 4)
            model = place(model, torch.device("cuda"))
            print(model(torch.randn(2, 8, device="cuda")))

        main()
        """})
    assert _codes(tmp_path, "finetune.py") == []


def test_trainer_that_moves_the_model_again_after_the_swap_is_silent(tmp_path):
    _project(tmp_path, {"heads.py": HEADS, "trainer.py": """
        import torch
        from heads import ActionHead, Policy

        class Trainer:
            def __init__(self, device):
                self.device = torch.device(device)
                self.model = Policy().to(self.device)

            def adapt_horizon(self, horizon):
                self.model.action_head = ActionHead(16, horizon)
                self.model.to(self.device)

            def step(self, obs):
                return self.model(obs.to(self.device)).mean()

        trainer = Trainer("cuda")
        trainer.adapt_horizon(4)
        trainer.step(torch.randn(2, 8))
        """})
    assert _codes(tmp_path, "trainer.py") == []


# ---- a fresh container of the model's own modules (field: WaveGlow remove_weightnorm) vs of new ones
WAVEGLOW = """
import torch
import torch.nn as nn


class WN(nn.Module):
    def __init__(self, n=2, c=8):
        super().__init__()
        self.in_layers = nn.ModuleList([nn.utils.weight_norm(nn.Conv1d(c, c, 3, padding=1)) for _ in range(n)])

    def forward(self, x):
        for layer in self.in_layers:
            x = torch.tanh(layer(x))
        return x


class WaveGlow(nn.Module):
    def __init__(self):
        super().__init__()
        self.WN = nn.ModuleList([WN() for _ in range(2)])

    def forward(self, x):
        for wn in self.WN:
            x = wn(x)
        return x


def {name}(conv_list):
    new_conv_list = torch.nn.ModuleList()
    for old_conv in conv_list:
        {body}
    return new_conv_list


def strip_norm(model):
    for wn in model.WN:
        wn.in_layers = {name}(wn.in_layers)
    return model
"""


def _waveglow(root, name, body):
    _project(root, {"waveglow.py": WAVEGLOW.format(name=name, body=body), "infer.py": """
        import torch
        from waveglow import WaveGlow, strip_norm

        def load_and_setup_model(device):
            model = WaveGlow()
            model.to(device)
            return model

        model = load_and_setup_model(torch.device("cuda"))
        model = strip_norm(model)
        print(model(torch.randn(1, 8, 16, device="cuda")))
        """})


def test_fresh_container_of_the_models_own_layers_is_silent(tmp_path):
    _waveglow(tmp_path, "remove", "new_conv_list.append(torch.nn.utils.remove_weight_norm(old_conv))")
    assert _codes(tmp_path, "infer.py") == []


def test_fresh_container_of_new_layers_after_the_move_is_found(tmp_path):
    _waveglow(tmp_path, "rebuild", "new_conv_list.append(torch.nn.Conv1d(8, 8, 3, padding=1))")
    assert _codes(tmp_path, "infer.py") == [(10, "DEV102")]
