"""`torch.Generator`: a generator lives on one device; a random op that fills a tensor on another
device with it raises "Expected a 'cuda' device type for generator but found 'cpu'"."""

from __future__ import annotations

import ast

from devflow.analysis import framework_api as F
from devflow.analysis.findings import Finding, FixPlan
from devflow.analysis.lattice import concrete, definitely_differ
from devflow.analysis.program import LINE_BASE
from devflow.analysis.values import UNKNOWN, Obj, Origin, Val
from devflow.analysis.interp.frames import span_of


class Generators:
    def new_generator(self, node, args, kwargs) -> Val:
        d = kwargs.get("device", args[0] if args else None)
        if d is None or d.kind == "const" and d.const is None:
            dev = concrete(F.GENERATOR_DEFAULT_DEVICE)
            org = Origin(span_of(node), f"created at line {node.lineno} without device=", "generator")
        else:
            dev = self._as_device(d)
            org = Origin(span_of(node), f"created on {dev.render() if dev else '?'} at line {node.lineno}")
        if dev is None or not dev.known:
            return UNKNOWN
        return Val("obj", obj=Obj("generator", qual="torch.Generator", dev=dev, origin=org))

    def seeded_default_generator(self, node, rest: str) -> Val:
        """`torch.manual_seed(s)` seeds every device's default generator and returns the cpu one."""
        org = Origin(span_of(node), f"`{self.text(node)}` at line {node.lineno} returns torch's default "
                     f"{F.GENERATOR_SEEDING[rest]} generator")
        return Val("obj", obj=Obj("generator", qual="torch.Generator", dev=concrete(F.GENERATOR_SEEDING[rest]), origin=org))

    def generator_arg(self, g: Val, written) -> Val:
        """A `generator=` value: torch's default generator object named by its qualified name
        (`torch.default_generator`, also as a parameter's default) is that generator."""
        if g.kind == "qual" and g.const and g.const.startswith("torch.") and g.const[6:] in F.GENERATOR_DEFAULT_OBJECTS:
            dev = F.GENERATOR_DEFAULT_OBJECTS[g.const[6:]]
            org = Origin(span_of(written), f"`{g.const}` is torch's default {dev} generator") if written is not None else None
            return Val("obj", obj=Obj("generator", qual="torch.Generator", dev=concrete(dev), origin=org))
        return g

    def check_generator(self, node, rest: str, args, kwargs) -> None:
        """`torch.randn(..., device=d, generator=g)`: the tensor drawn is on `d` (or on the device of
        the tensor argument: `torch.normal(mean, std, generator=g)`, `torch.multinomial(p, n, ...)`)."""
        g = self.generator_arg(kwargs["generator"], next((k.value for k in node.keywords if k.arg == "generator"), None))
        if g.kind != "obj" or g.obj is None or g.obj.kind != "generator":
            return
        d = kwargs.get("device")
        if d is not None and not (d.kind == "const" and d.const is None):
            written = next((k.value for k in node.keywords if k.arg == "device"), None)  # else from a `**kwargs` spread
            target, ttext = self._as_device(d), self.text(written) if written is not None else None
        else:
            t = next(((v, a) for v, a in zip(args, node.args) if v.kind == "tensor"), None)
            if t is not None:
                target, ttext = t[0].dev, f"{self.text(t[1])}.device"
            else:
                target, ttext = self.default_dev, None
        self.report_generator(node, g, target, ttext)

    def check_generator_method(self, node, t: Val, name: str, kwargs) -> None:
        """`x.normal_(generator=g)`: fills `x` where it is."""
        g = kwargs.get("generator")
        if g is not None:
            g = self.generator_arg(g, next((k.value for k in node.keywords if k.arg == "generator"), None))
        if name in F.GENERATOR_METHODS and g is not None and g.kind == "obj" and g.obj is not None and g.obj.kind == "generator":
            self.report_generator(node, g, t.dev, f"{self.text(node.func.value)}.device")

    def check_loader_sampler(self, node) -> None:
        """`DataLoader(ds, shuffle=True)` with no generator or sampler: its RandomSampler draws
        `torch.randperm(n, generator=<a cpu generator>)`, which the default device (set to an accelerator by
        `set_default_device` / `set_default_tensor_type`) makes an accelerator op. DEV601 says so when both are in
        one file; this is the default set in another file (an entry script) reaching a loader built in a function
        it calls."""
        org = self.default_origin
        if org is None or self.default_dev is None or not self.default_dev.known or self.default_dev.is_cpu or \
                org.span.line // LINE_BASE == node.lineno // LINE_BASE or org.kind == "context":
            return  # a `with torch.device(...)` block: the sampler draws when the loader is iterated, maybe after it
        given = {k.arg for k in node.keywords}
        if given & {"generator", "sampler", "batch_sampler", None}:
            return  # `None`: a `**kwargs` spread may hold any of them
        shuffle = next((k.value for k in node.keywords if k.arg == "shuffle"), node.args[2] if len(node.args) > 2 else None)
        if not (isinstance(shuffle, ast.Constant) and shuffle.value is True):
            return
        self.add(Finding("DEV601", span_of(node),
                         f"the default tensor type / device is {self.default_dev.render()} ({org.reason}) but this "
                         f"shuffling DataLoader's sampler draws from a cpu generator: \"Expected a 'cuda' device type "
                         f"for generator\"; give it `generator=torch.Generator(device=...)` on the default device",
                         [(org.span, org.reason)]))

    def check_default_generator_draw(self, node, rest: str) -> None:
        """`random_split(ds, lengths)` with no generator draws `randperm(n, generator=torch.default_generator)`:
        torch's own cpu generator, on the default device; where the program made that an accelerator
        (`set_default_tensor_type(torch.cuda.FloatTensor)`, `set_default_device("cuda")`, `with torch.device(...)`,
        here or in a file it imports) the draw raises "Expected a 'cuda' device type for generator" (DEV601)."""
        org, dev = self.default_origin, self.default_dev
        gdev = concrete(F.GENERATOR_GIVEN_DRAWS[rest])
        if org is None or dev is None or not dev.known or gdev is None or not definitely_differ(gdev, dev) or \
                any(isinstance(a, ast.Starred) for a in node.args) or len(node.args) > 2:
            return  # (a third positional argument is the generator)
        name = rest.rsplit(".", 1)[-1]
        self.add(Finding("DEV601", span_of(node),
                         f"the default tensor type / device is {dev.render()} ({org.reason}) but `{name}` draws with its "
                         f"default generator, torch's {gdev.render()} one: \"Expected a '{dev.kind if dev.kind != 'sym' else 'cuda'}' "
                         f"device type for generator\"; give it `generator=torch.Generator(device=...)` on the default device",
                         [(org.span, org.reason)]))

    def report_generator(self, node, g: Val, target, ttext: str | None) -> None:
        if g.kind != "obj" or g.obj is None or g.obj.kind != "generator":
            return
        gdev = g.obj.dev
        if target is None or not target.known or not definitely_differ(gdev, target):
            return
        key = ("generator", span_of(node))
        if key in self.mix_origins:
            return
        self.mix_origins.add(key)
        org = g.obj.origin
        written = next((k.value for k in node.keywords if k.arg == "generator"), None)
        gtext = self.text(written) if written is not None else "generator"
        fix = None
        src = org.span if org is not None else None
        dev_text = ttext if ttext and self._available(ttext, self.frame, org.span.line if org else node.lineno) \
            else target.source_text() if target.kind != "sym" else None
        if org is not None and org.kind == "generator" and dev_text and self.scope_of(org.span.line) is self.scope_of(node.lineno):
            fix = FixPlan("add_kwarg", src, text=dev_text, name="device",
                          title=f"Create the generator on the device it draws for: add `device={dev_text}`")
        self.add(Finding("DEV205", span_of(node),
                         f"the generator `{gtext}` is on {gdev.render()}" + (f" ({org.reason})" if org else "")
                         + f" but the tensor it draws is on {target.render()}; torch raises \"Expected a "
                         f"'{target.kind if target.kind != 'sym' else 'cuda'}' device type for generator but found "
                         f"'{gdev.kind if gdev.kind != 'sym' else 'cuda'}'\"", [(org.span, org.reason)] if org else [], fix))
