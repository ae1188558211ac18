"""The abstract interpreter behind devflow's rules: a device lattice over Python's `ast`.

Read in the order of the design (program -> per-file index -> evaluator -> findings -> rules):
- `program`: the project: where `from models import Net`, `import utils`, packages and relative
  imports resolve (the file's folder, the folder above its top package, the project root, an
  editor's workspace folder); each project file parsed once per content, never imported or run.
- `importers`: findings that runs of the scripts importing a file place inside it.
- `index`: import aliases, classes (which are nn.Modules), functions of one file.
- `lattice`: devices (cpu, cuda / cuda:N, mps, meta, symbolic "the value of `device`", unknown),
  join and "definitely differ" (an accelerator-intended symbolic device differs from cpu).
- `values`: abstract values (tensors with a device and an origin, heap objects for modules,
  instances, containers, optimizers, tokenizers, loaders).
- `interp` (a package, one module per concern): runs module-level code (and `if __name__ ==
  "__main__":`), follows calls into functions, methods and classes of the file and of the project
  files it imports with the callers' abstract arguments (memoised per abstract arguments, to any
  depth, recursion cut), joins branches, runs loop bodies once; every other function runs once on
  its own with unknown arguments and without following calls (fast on libraries). It reports mixes
  only when two devices definitely differ, and records device hints for names.
- `torch_api`: library knowledge the engine reads (device constructors, factories, modules ...).
- `findings`: what the interpreter hands to the rules (code, span, message, related, fix plan).
"""
