"""`devflow dryrun`: run a training script on a machine without a GPU, with CUDA emulated, and
report every device mix it makes (not only the first).

Layout:
    cli.py        the command line: options, a child process per run, the report
    child.py      what runs inside the child: installs the emulation, runs the script, saves findings
    vtensor.py    VirtualTensor: real cpu (or meta) data under a virtual device tag
    dispatch.py   the aten-level hook: CUDA's device rules per op, then the op on the cpu data
    devrules.py   which operands CUDA requires on one device, and CUDA's wording when they are not
    cuda_api.py   the virtual accelerator: torch.cuda.*, Tensor.to/.cuda, factories, AMP
    generators.py torch.Generator on virtual devices and CUDA's generator device check
    wrappers.py   torch.load/save, DataParallel, DDP, torch.compile, DataLoader (pinning, worker queues)
    gpu_count.py  DataParallel over every GPU on one virtual GPU: what 2+ GPUs would see (DEV910)
    spawned.py    processes started with `spawn` run under the emulation too
    recorder.py   findings: user line, stack, operand origins, dedup by (line, kind), worker processes
    limits.py     --max-steps (optimizer steps) and --timeout
    report.py     text / json / sarif, the static rule's fix for the same line
"""
