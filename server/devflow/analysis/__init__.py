"""The abstract interpreter behind devflow's rules: a device lattice over Python's `ast`.

- `lattice`: devices (cpu, cuda / cuda:N, mps, meta, symbolic "the value of `device`", unknown),
  join and "definitely differ" (an accelerator-intended symbolic device differs from cpu).
- `values`: abstract values (tensors with a device and an origin, heap objects for modules,
  instances, containers, optimizers, tokenizers, loaders).
- `torch_api`: static tables copied from torch (device constructors, legacy cpu types, parameter-free
  modules, weighted losses, optimizers); the engine never imports torch.
- `index`: import aliases, classes (which are nn.Modules), functions of one file.
- `interp` (a package, one module per concern): runs module-level code (and `if __name__ == "__main__":`), follows calls into same-file
  functions, methods and classes with the callers' abstract arguments (depth-limited, memoised),
  joins branches, runs loop bodies once; every other function runs once on its own with unknown
  arguments and without following calls (fast on libraries). It reports mixes only when two devices
  definitely differ, and records device hints for names at assignments and uses.
- `findings`: what the interpreter hands to the rules (code, span, message, related, fix plan).
"""
