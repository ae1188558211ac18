"""Semantics found missing by the unseen batch X (tests/fixtures/engine/unseen/x_*), each tested on the
variations a user writes (renamed, split into files, one helper deeper, inside a trainer class) and on
the neighbours that must stay silent:
- a script in a folder that is not a package (`scripts/evaluate.py`) importing a module that is not beside
  it but sits in the folder above, when that folder is a repository's root (README, requirements,
  licence, environment or packaging file there): the script runs from the root (`python -m
  scripts.evaluate`), so the import resolves there even with no .git / setup.py marking the project."""

from __future__ import annotations

from project_fixtures import codes as _codes, write_project as _project


AGENT = """
import torch


class Agent:
    def __init__(self, model, device=None, num_envs=1):
        self.model = model
        self.device = device
        self.memories = torch.zeros(num_envs, 16)
        self.model.to(self.device)

    def get_actions(self, obs):
        x = torch.tensor(obs, device=self.device, dtype=torch.float)
        out, self.memories = self.model(x, self.memories)
        return out.argmax(-1).cpu().numpy()
"""

MODEL = """
import torch
import torch.nn as nn


class RecurrentPolicy(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(4, 8)
        self.cell = nn.LSTMCell(8, 8)
        self.head = nn.Linear(8, 2)

    def forward(self, x, memory):
        h, c = self.cell(self.encoder(x), (memory[:, :8], memory[:, 8:]))
        return self.head(h), torch.cat((h, c), dim=1)
"""

EVALUATE = """
import numpy
import torch

import utils
from model import RecurrentPolicy

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
agent = utils.Agent(RecurrentPolicy(), device=device, num_envs=4)
actions = agent.get_actions(numpy.zeros((4, 4)))
print(actions)
"""


def _repo(tmp_path, marker="README.md", **files):
    base = {"utils/__init__.py": "from .agent import *\n", "utils/agent.py": AGENT, "model.py": MODEL,
            "scripts/evaluate.py": EVALUATE}
    if marker:
        base[marker] = "x\n"
    base.update(files)
    _project(tmp_path, base)


def test_script_folder_imports_the_repository_root_package(tmp_path):
    _repo(tmp_path)
    assert _codes(tmp_path, "scripts/evaluate.py") == [(9, "DEV201")]


def test_the_root_is_known_by_its_requirements_or_licence_file_too(tmp_path):
    _repo(tmp_path, marker="requirements.txt")
    assert _codes(tmp_path, "scripts/evaluate.py") == [(9, "DEV201")]
    _repo(tmp_path / "lic", marker="LICENSE")
    assert _codes(tmp_path / "lic", "scripts/evaluate.py") == [(9, "DEV201")]


def test_the_agent_module_itself_names_the_script_that_runs_it(tmp_path):
    _repo(tmp_path)
    assert _codes(tmp_path, "utils/agent.py") == [(8, "DEV201")]


def test_renamed_folders_and_the_helper_one_call_deeper_in_a_trainer_class(tmp_path):
    _project(tmp_path, {
        "requirements.txt": "torch\n",
        "rl/__init__.py": "",
        "rl/memory_agent.py": AGENT,
        "nets.py": MODEL,
        "tools/rollout.py": """
            import numpy
            import torch

            from rl.memory_agent import Agent
            from nets import RecurrentPolicy


            class Evaluator:
                def __init__(self, cfg):
                    self.device = torch.device(cfg["device"])
                    self.agent = self.make_agent()

                def make_agent(self):
                    return Agent(RecurrentPolicy(), device=self.device, num_envs=2)

                def run(self):
                    return self.agent.get_actions(numpy.zeros((2, 4)))


            Evaluator({"device": "cuda"}).run()
            """})
    assert _codes(tmp_path, "tools/rollout.py") == [(17, "DEV201")]


def test_silent_without_a_repository_root_above(tmp_path):
    _repo(tmp_path, marker=None)
    assert _codes(tmp_path, "scripts/evaluate.py") == []


def test_silent_when_the_memories_follow_the_device(tmp_path):
    _repo(tmp_path, **{"utils/agent.py": AGENT.replace("torch.zeros(num_envs, 16)",
                                                      "torch.zeros(num_envs, 16, device=device)")})
    assert _codes(tmp_path, "scripts/evaluate.py") == []


def test_a_module_beside_the_script_wins_over_the_root_one(tmp_path):
    # scripts/utils.py is found first (the script's own folder is sys.path[0]); its agent is correct
    _repo(tmp_path, **{"scripts/utils.py": AGENT.replace("torch.zeros(num_envs, 16)",
                                                        "torch.zeros(num_envs, 16, device=device)")})
    assert _codes(tmp_path, "scripts/evaluate.py") == []


# ---- Process / Thread subclasses: `start()` runs the project's own `run`
NET = """
import torch
import torch.nn as nn


class PolicyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)

    def act(self, state, device):
        x = torch.tensor([state], dtype=torch.float32).to(device)
        return self.forward(x).argmax(-1).item()
"""

WORKER = """
import torch.multiprocessing as mp

from net import PolicyNet


class Worker(mp.Process):
    def __init__(self, global_net, device):
        super().__init__()
        self.device = device
        self.local_net = PolicyNet()
        self.local_net.load_state_dict(global_net.state_dict())

    def run(self):
        state = [0.0, 0.0, 0.0, 0.0]
        for _ in range(10):
            action = self.local_net.act(state, self.device)
"""

MAIN = """
import torch

from net import PolicyNet
from worker import Worker

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

if __name__ == "__main__":
    global_net = PolicyNet()
    global_net.share_memory()
    workers = [Worker(global_net, device) for _ in range(4)]
    [w.start() for w in workers]
    [w.join() for w in workers]
"""


def test_process_start_runs_the_workers_run(tmp_path):
    _project(tmp_path, {"net.py": NET, "worker.py": WORKER, "main.py": MAIN})
    assert _codes(tmp_path, "worker.py") == [(16, "DEV106")]
    assert (12, "DEV106") in _codes(tmp_path, "main.py")


def test_thread_subclass_one_project_base_deeper_started_in_a_loop(tmp_path):
    _project(tmp_path, {
        "net.py": NET,
        "actors.py": """
            import threading

            from net import PolicyNet


            class BaseActor(threading.Thread):
                def __init__(self, device):
                    super().__init__(daemon=True)
                    self.device = device
                    self.policy = PolicyNet()


            class RolloutActor(BaseActor):
                def run(self):
                    self.collect()

                def collect(self):
                    return self.policy.act([1.0, 0.0, 0.0, 1.0], self.device)
            """,
        "launch.py": """
            import torch

            from actors import RolloutActor

            actors = []
            for i in range(2):
                actors.append(RolloutActor(torch.device("cuda")))
            for a in actors:
                a.start()
            """})
    assert _codes(tmp_path, "launch.py") == [(9, "DEV106")]


def test_silent_when_the_worker_moves_its_network(tmp_path):
    _project(tmp_path, {"net.py": NET, "main.py": MAIN, "worker.py": WORKER.replace(
        "self.local_net.load_state_dict(global_net.state_dict())",
        "self.local_net.load_state_dict(global_net.state_dict())\n        self.local_net.to(device)")})
    assert _codes(tmp_path, "worker.py") == []
    assert _codes(tmp_path, "main.py") == []


def test_silent_when_the_class_defines_its_own_start_or_is_no_process(tmp_path):
    own_start = WORKER.replace("    def run(self):", "    def start(self):\n        pass\n\n    def run(self):")
    _project(tmp_path, {"net.py": NET, "main.py": MAIN, "worker.py": own_start})
    assert _codes(tmp_path, "main.py") == []
    plain = WORKER.replace("class Worker(mp.Process):", "class Worker:").replace("        super().__init__()\n", "")
    _project(tmp_path / "plain", {"net.py": NET, "main.py": MAIN, "worker.py": plain})
    assert _codes(tmp_path / "plain", "main.py") == []
