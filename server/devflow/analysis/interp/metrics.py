"""Metric objects (torchmetrics; generated: frameworks.json `metrics`).

- A metric class of the library (`torchmetrics.Accuracy(...)`), or a project class deriving from one, is a module
  in the role "metric": built on the cpu (a library metric on its `device=`), moved by `.to()` or with the module
  that holds it (Metric moves its states in `_apply`).
- `self.add_state(name, default)` (generated: the library's methods that set on self an attribute named by one
  parameter to another) registers a state: held like a buffer, moved with the metric. A project metric is where
  its tensor states are (a 0-dim accumulator counts: it is gathered like any state); list states say nothing.
- `metric.compute()` / `metric.sync()` (generated: the methods that gather the states over the default process
  group when one is initialised) on a metric whose states are on the cpu, while the default group is NCCL-only
  (`init_process_group("nccl")`, or a Lightning Trainer's strategy while it runs the module's hooks): the
  all-gather refuses cpu tensors ("No backend type associated with device type cpu"): DEV208.
"""

from __future__ import annotations

from devflow.analysis import framework_api as FW
from devflow.analysis.interp.class_bases import any_base
from devflow.analysis.interp.frames import span_of
from devflow.analysis.lattice import CPU, join
from devflow.analysis.values import Obj, Origin, Val


def derives_from_metric(info, index) -> bool:
    """A project class built on a metric library's class (`class MetricACC(torchmetrics.Metric)`)."""
    return any_base(info, index, lambda q, resolved: q in FW.METRIC_CLASSES)


def metric_states_device(obj):
    """Where a project metric's registered tensor states are (joined); None when it has none known."""
    dev = None
    for name in getattr(obj, "metric_states", ()):
        v = obj.attrs.get(name)
        if v is None or v.kind != "tensor" or v.dev is None:
            return None
        dev = v.dev if dev is None else join(dev, v.dev)
    return dev


class Metrics:
    """Metric objects: construction, state registration, and the sync of their states."""

    def new_library_metric(self, node, q: str, kwargs) -> Val:
        """`torchmetrics.Accuracy(task=..., device=...)`: on its `device=`, else on the cpu."""
        given = kwargs.get("device")
        dev = given.dev if given is not None and given.kind == "device" else CPU
        return Val("module", obj=Obj("module", qual=q, dev=dev, role="metric",
                                     origin=Origin(span_of(node), f"created at line {node.lineno} on {dev.render()}")))

    def register_metric_state(self, obj, name: str, args, kwargs) -> bool:
        """`self.add_state("total", default=torch.tensor(0.0), ...)` in a project metric: a state named by a
        constant, held (and moved) like a buffer. False when this is not such a call."""
        spec = FW.METRIC_STATE_REGISTRARS.get(name)
        if spec is None or obj is None or obj.role != "metric":
            return False
        key = args[spec["name"]] if len(args) > spec["name"] else kwargs.get("name")
        value = args[spec["value"]] if len(args) > spec["value"] else kwargs.get(spec["value_kw"])
        if key is None or value is None or key.kind != "const" or not isinstance(key.const, str):
            return False
        obj.buffers.add(key.const)
        obj.attrs[key.const] = value
        states = getattr(obj, "metric_states", None)
        if states is None:
            states = obj.metric_states = []  # type: ignore[attr-defined]
        if key.const not in states:
            states.append(key.const)
        return True

    def check_metric_sync(self, node, mod: Val, name: str) -> None:
        """`metric.compute()` gathering cpu states over an NCCL-only default process group (DEV208)."""
        obj = mod.obj
        if name not in FW.METRIC_SYNCING_METHODS or obj is None or obj.role != "metric" or self.standalone:
            return
        dev = obj.dev if obj.cls is None else metric_states_device(obj)
        if obj.cls is not None and obj.moved is not None:
            dev = obj.dev  # moved as a whole (`.to()`, or with the module holding it)
        if dev is None or not dev.is_cpu:
            return
        group = self._nccl_default_group()
        if group is None or not self._first_report(node):
            return
        self.report_cpu_sync(node, group, obj.origin, lambda made: (
            f"`{self.text(node.func)}()` gathers the metric's states over the default process group, which is NCCL "
            f"and communicates cuda tensors only, but the metric is on the cpu{made} (\"No backend type associated "
            f"with device type cpu\"): put the metric on the process's device (`.to(device)`), or create it where the "
            f"module that holds it is moved"))

    def _nccl_default_group(self):
        """(span, why) of what set up an NCCL-only default process group in effect here; None otherwise."""
        if self.lightning_group is not None:
            span, text = self.lightning_group
            return span, f"the Trainer's strategy sets up an NCCL process group: `{text}`"
        pg = self.group_backend(None)
        if pg is None:
            return None
        backends = dict(pg[0])
        cpu = backends.get("cpu")
        if cpu is not None and "cpu" in FW.BACKEND_DEVICES.get(cpu, ()):
            return None
        named = ", ".join(sorted(set(backends.values())))
        return pg[1], f"default process group created with backend {named!r} here{pg[2]}"
