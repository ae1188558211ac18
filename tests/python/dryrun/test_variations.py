"""`devflow dryrun` on programs written the way users write them (tests/python/dryrun/variations,
not corpus copies): a project split over files, a mix two calls deep in a Trainer method, a mix in
a collate_fn running in DataLoader worker processes, AMP + GradScaler resumed from a checkpoint
saved on the GPU, generators on the wrong device, boolean-mask / index-tensor indexing across
devices, .item() control flow, DataParallel over one and two virtual GPUs (a BatchNorm conversion
after the move, split over files inside a trainer, and its fixed twins), pin_memory of cuda
batches, CUDA in forked / spawned DataLoader workers, packed sequences, a correct script of everyday
idioms (numpy, deepcopy, checkpoints loaded with every kind of map_location) that must stay silent.

Each program marks the lines where CUDA raises with a `# dryrun-expect: CODE` comment (or
`# dryrun-expect(TAG): CODE` for a run given TAG below); the run must report exactly those
(file, line, code), nothing else, and end normally."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("torch")

HERE = Path(__file__).parent / "variations"
EXPECT = re.compile(r"#\s*dryrun-expect(?:\((\w+)\))?:\s*(DEV\d{3})")

# run name -> (script, arguments, dry-run options, tag of the expectations that apply)
RUNS = {
    "split": ("split_train.py", [], [], None),
    "trainer_deep": ("trainer_deep.py", [], [], None),
    "collate_workers": ("collate_workers.py", [], [], None),
    "generator": ("generator_device.py", [], [], None),
    "mask_indexing": ("mask_indexing.py", [], [], None),
    "item_control": ("item_control.py", [], ["--max-steps", "0"], None),
    # DataParallel over every GPU moves its module itself with one GPU (the run goes on, DEV910 says
    # that 2+ GPUs fail), only checks with two (DEV903)
    "dataparallel_1gpu": ("dataparallel_late.py", [], [], None),
    "dataparallel_2gpus": ("dataparallel_late.py", [], ["--gpus", "2"], "gpus2"),
    "dataparallel_moves_1gpu": ("dataparallel_moves.py", [], [], None),
    "dataparallel_moves_2gpus": ("dataparallel_moves.py", [], ["--gpus", "2"], "gpus2"),
    "crossnorm_1gpu": ("crossnorm_trainer.py", [], [], None),
    "crossnorm_2gpus": ("crossnorm_trainer.py", [], ["--gpus", "2"], "gpus2"),
    # the fixed twins: moved after the conversion, counters replaced on cuda, one GPU on purpose
    "crossnorm_move_after": ("crossnorm_trainer.py", ["move_after"], [], "twin"),
    "crossnorm_move_after_2gpus": ("crossnorm_trainer.py", ["move_after"], ["--gpus", "2"], "twin"),
    "crossnorm_cuda_counters": ("crossnorm_trainer.py", ["cuda_counters"], [], "twin"),
    "crossnorm_gpu0": ("crossnorm_trainer.py", ["gpu0"], [], "twin"),
    "pinned_loader": ("pinned_loader.py", [], [], None),
    "worker_cuda": ("worker_cuda.py", [], [], None),
    "packed_lengths": ("packed_lengths.py", [], [], None),
    "everyday_idioms": ("everyday_idioms.py", [], [], None),
    "everyday_state": ("everyday_state.py", [], [], None),
    "everyday_ops": ("everyday_ops.py", [], [], None),
    "everyday_ops_bugs": ("everyday_ops_bugs.py", [], [], None),
    "everyday_bugs": ("everyday_bugs.py", [], [], None),
    "everyday_archives": ("everyday_archives.py", [], [], None),
}


def expected(tag: str | None) -> set[tuple[str, int, str]]:
    out = set()
    for path in HERE.glob("*.py"):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            for m in EXPECT.finditer(line):
                if m.group(1) == tag:
                    out.add((path.name, n, m.group(2)))
    return out


def dryrun(cwd: Path, script: str, args: list[str], options: list[str]) -> tuple[dict, subprocess.CompletedProcess]:
    proc = subprocess.run([sys.executable, "-m", "devflow.dryrun", "--format", "json", "--no-static", *options,
                           script, *args], cwd=cwd, capture_output=True, text=True, timeout=300)
    return json.loads(proc.stdout), proc


def found(doc: dict) -> set[tuple[str, int, str]]:
    return {(Path(d["path"]).name, d["line"], d["code"]) for d in doc["diagnostics"]}


@pytest.fixture(scope="module")
def results():
    def one(item):
        name, (script, args, options, _tag) = item
        return name, dryrun(HERE, script, args, options)

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(one, RUNS.items()))


@pytest.mark.parametrize("name", list(RUNS))
def test_each_mix_at_its_line_and_nothing_else(results, name):
    script, _args, _options, tag = RUNS[name]
    doc, proc = results[name]
    want = {w for w in expected(tag) if _belongs(w[0], script)}
    assert found(doc) == want, (name, sorted(found(doc)), proc.stderr[-3000:])
    assert doc["status"]["state"] == "finished", doc["status"]


def _belongs(filename: str, script: str) -> bool:
    """The files a run executes: the script and the modules it imports (here: by name)."""
    if filename == script:
        return True
    text = (HERE / script).read_text()
    return re.search(rf"^(from|import)\s+{re.escape(filename[:-3])}\b", text, re.M) is not None


def test_split_project_findings_name_the_cause_in_the_other_file(results):
    doc, _ = results["split"]
    by_file = {Path(d["path"]).name: d for d in doc["diagnostics"]}
    loss = by_file["seqtrainer.py"]
    weight = next(o for o in loss["operands"] if o["name"] == "weight")
    assert weight["device"] == "cpu" and weight["origins"][0]["line"] == 10  # `weights = torch.ones(vocab)`
    assert any(Path(r["path"]).name == "split_train.py" for r in loss["related"])


def test_trainer_mix_two_calls_deep_keeps_the_call_chain(results):
    doc, _ = results["trainer_deep"]
    (d,) = doc["diagnostics"]
    functions = [f["function"] for f in d["stack"] if f["function"] != "<genexpr>"]
    assert functions[:4] == ["_penalty", "_loss", "_run_epoch", "fit"], d["stack"]
    anchor = next(o for o in d["operands"] if o["device"] == "cpu")
    assert (anchor["origins"][0]["kind"], anchor["origins"][0]["line"]) == ("moved", 11)  # `.cpu()` in __init__


def test_collate_fn_mix_in_worker_processes_counts_every_batch(results):
    doc, _ = results["collate_workers"]
    (d,) = [d for d in doc["diagnostics"] if d["code"] == "DEV901"]
    assert d["count"] == 4  # 32 rows / batches of 8, collated in two worker processes


def test_generator_findings_use_cudas_words(results):
    doc, _ = results["generator"]
    assert {d["message"] for d in doc["diagnostics"]} == {"Expected a 'cpu' device type for generator but found 'cuda'"}


def test_default_cuda_device_and_a_cpu_generator(tmp_path):
    # set_default_device("cuda"), then a sampler's own cpu generator: CUDA's message, and the line
    # that made cuda the default among the related locations.
    (tmp_path / "train.py").write_text(
        "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n\n"
        "torch.set_default_device('cuda')\n"
        "loader = DataLoader(TensorDataset(torch.arange(10.0)), batch_size=5, shuffle=True,\n"
        "                    generator=torch.Generator(device='cpu'))\n"
        "for (b,) in loader:\n"
        "    pass\n")
    doc, proc = dryrun(tmp_path, "train.py", [], [])
    assert found(doc) == {("train.py", 7, "DEV904")}, proc.stderr[-2000:]
    (d,) = doc["diagnostics"]
    assert d["message"] == "Expected a 'cuda' device type for generator but found 'cpu'"
    assert {(r["line"], r["message"]) for r in d["related"]} >= {(4, "the default device (cuda:0) set here"),
                                                                  (6, "generator created here on cpu")}


def test_item_control_flow_matches_a_plain_run(results):
    doc, proc = results["item_control"]
    plain = subprocess.run([sys.executable, "item_control.py"], cwd=HERE, capture_output=True, text=True,
                           timeout=120).stdout
    # the run goes through the phase switch only because .item() returns the real accuracy
    assert "calibrating from epoch" in plain
    pick = ("calibrating", "early stop", "acc ")
    dry = [ln for ln in proc.stderr.splitlines() if ln.startswith(pick)]
    assert dry == [ln for ln in plain.splitlines() if ln.startswith(pick)]


def test_amp_gradscaler_resume_from_a_checkpoint_saved_on_the_gpu(tmp_path):
    shutil.copy(HERE / "amp_resume.py", tmp_path)
    first, proc = dryrun(tmp_path, "amp_resume.py", [], ["--max-steps", "0"])
    assert found(first) == set() and first["status"]["state"] == "finished", proc.stderr[-2000:]
    resumed, proc = dryrun(tmp_path, "amp_resume.py", ["--resume"], [])
    want = {w for w in expected("resume") if w[0] == "amp_resume.py"}
    # the EMA dict loaded on the cpu is the one mix; model / optimizer / scaler states follow
    # their load_state_dict, and the 0-dim best loss is compared as CUDA allows
    assert found(resumed) == want, proc.stderr[-3000:]
    assert resumed["status"]["state"] == "finished"


def test_pinning_cuda_batches_is_reported_at_the_loader_with_cudas_words(results):
    doc, _ = results["pinned_loader"]
    by_line = {d["line"]: d for d in doc["diagnostics"]}
    assert by_line[12]["message"] == "cannot pin 'torch.cuda.FloatTensor' only dense CPU tensors can be pinned"
    # the loop that pinned the batch is on the stack; the operand says where it went to the GPU
    assert [f["line"] for f in by_line[12]["stack"]][:2] == [12, 34]
    assert by_line[12]["operands"][0]["origins"][0]["line"] == 10
    assert by_line[37]["count"] == 8  # 4 batches of (inputs, labels)


def test_cuda_in_forked_workers_uses_cudas_words_and_spawned_workers_run_emulated(results):
    doc, proc = results["worker_cuda"]
    by_line = {d["line"]: d for d in doc["diagnostics"]}
    assert by_line[18]["message"] == ("Cannot re-initialize CUDA in forked subprocess. To use CUDA with "
                                      "multiprocessing, you must use the 'spawn' start method")
    assert by_line[29]["message"].startswith("CUDA error: initialization error")
    # every item of every worker; the spawned workers' mix counted from their own report files
    assert by_line[18]["count"] == by_line[29]["count"] == by_line[40]["count"] == 8
    assert "done" in proc.stderr


def test_pin_at_the_users_call_and_workers_before_the_parent_uses_cuda(tmp_path):
    # A cuda tensor pinned by the user's own call: at that line. Workers forked before the parent
    # touched CUDA may use it (they initialise it themselves): silent, as on a GPU.
    (tmp_path / "train.py").write_text(
        "import torch\nfrom torch.utils.data import DataLoader, Dataset\n\n\n"
        "class DS(Dataset):\n"
        "    def __len__(self):\n        return 4\n\n"
        "    def __getitem__(self, i):\n        return torch.ones(2).cuda()\n\n\n"
        "if __name__ == '__main__':\n"
        "    batches = list(DataLoader(DS(), batch_size=2, num_workers=2))\n"
        "    assert all(b.is_cuda for b in batches)\n"
        "    w = torch.zeros(2, device='cuda')\n"
        "    p = w.pin_memory()\n"
        "    assert not w.is_pinned() and torch.zeros(2).pin_memory().is_pinned()\n")
    doc, proc = dryrun(tmp_path, "train.py", [], [])
    assert found(doc) == {("train.py", 17, "DEV908")}, proc.stderr[-2000:]
    assert doc["status"]["state"] == "finished", doc["status"]


def test_packed_lengths_use_cudas_words_and_the_run_trains_on(results):
    doc, _ = results["packed_lengths"]
    (d,) = doc["diagnostics"]
    assert d["message"] == "'lengths' argument should be a 1D CPU int64 tensor, but got 1D cuda:0 Long tensor"
    assert d["count"] == 2 and doc["status"]["steps"] == 2  # once per step: the training went on after it


def test_dataparallel_over_every_gpu_on_one_gpu_says_what_two_gpus_raise(results):
    doc, _ = results["crossnorm_1gpu"]
    (d,) = doc["diagnostics"]
    assert d["severity"] == "warning" and d["count"] == 1  # three forwards, one DataParallel
    assert ('raises "module must have its parameters and buffers on device cuda:0 (device_ids[0]) but found one '
            'of them on device: cpu" (features.1.num_batches_tracked is on cpu)') in d["message"]
    assert "moves the module to cuda:0 itself, so this script runs on 1 GPU and fails on 2 or more" in d["message"]
    related = {(Path(r["path"]).name, r["line"]): r["message"] for r in d["related"]}
    assert related[("crossnorm.py", 17)].endswith("created here on cpu")  # the converted norm's counter
    assert related[("crossnorm.py", 26)].startswith("DataParallel built here over every GPU")  # _rewrap
    assert ("crossnorm.py", 31) in related  # the conversion that rebuilt the wrapper


def test_dataparallel_every_gpu_reported_once_per_wrapper(results):
    doc, _ = results["dataparallel_moves_1gpu"]
    counts = {d["line"]: d["count"] for d in doc["diagnostics"] if d["code"] == "DEV910"}
    assert counts[16] == 1 and counts[45] == 2  # three forwards of one wrapper; two wrappers
