"""torch.distributions: a distribution keeps its parameters as tensors (Python numbers become 0-dim
tensors on the default device); its samples, log-probabilities and statistics are on their device,
and `log_prob(value)` / `cdf(value)` combine `value` with them. One built from other distributions
(Independent, TransformedDistribution, MixtureSameFamily) computes with theirs."""

from __future__ import annotations

from devflow.analysis import framework_api as F
from devflow.analysis.lattice import TOP
from devflow.analysis.values import UNKNOWN, Obj, Origin, Val
from devflow.analysis.interp.frames import span_of


class Distributions:
    def new_distribution(self, node, cls: str, args, kwargs, frame) -> Val:
        info = F.DISTRIBUTIONS[cls]
        if "__opaque__" in kwargs:
            return UNKNOWN
        bound = dict(zip(info["signature"], args))
        bound.update({k: v for k, v in kwargs.items() if k in info["signature"]})
        params = {p: bound[p] for p in info["params"] if p in bound and not (bound[p].kind == "const" and bound[p].const is None)}
        if not params:
            return UNKNOWN
        texts = {**{p: self.text(a) for p, a in zip(info["signature"], node.args)},
                 **{k.arg: self.text(k.value) for k in node.keywords if k.arg}}
        tensors = [(v, texts.get(p, p)) for p, v in params.items() if v.kind == "tensor"]
        if len(tensors) >= 2 and self.check_mix(node, tensors, frame):
            return UNKNOWN  # its parameters are broadcast together: that fails here already
        if tensors:
            if any(v.kind not in ("tensor", "const", "number") for v in params.values()):
                return UNKNOWN
            res = self.result_of([v for v, _ in tensors])
            if res.kind != "tensor" or res.dev is None or not res.dev.known:
                return UNKNOWN
            dev, org, scalar = res.dev, res.origin, all(v.scalar for v, _ in tensors)
        elif all(v.kind == "number" or v.kind == "const" and isinstance(v.const, (int, float)) for v in params.values()):
            # Python numbers: broadcast_all makes them 0-dim tensors on the default device
            if self.default_dev is not None and not self.default_dev.is_cpu:
                return UNKNOWN
            dev, scalar = self.default_dev, True
            org = Origin(span_of(node), f"a `{cls}` built from Python numbers at line {node.lineno}: its parameters "
                                        f"are cpu tensors", "distribution")
        else:
            return UNKNOWN
        obj = Obj("distribution", qual=f"torch.distributions.{cls}", dev=dev, origin=org)
        obj.scalar = scalar  # type: ignore[attr-defined]
        for p, v in params.items():
            obj.attrs[p] = v
        for p in F.DIST_TENSOR_PROPERTIES:
            obj.attrs[p] = Val("tensor", dev, org, scalar=scalar)
        return Val("obj", obj=obj)

    def composite_distribution(self, node, cls: str, args, kwargs) -> Val | None:
        """`Independent(Normal(loc, scale), 1)`, `TransformedDistribution(base, transforms)`,
        `MixtureSameFamily(mix, components)`: a distribution built from other distributions computes
        with their parameters, so it is where they are (unknown when they are not all on one device).
        None when no argument is a distribution (a transform, a constraint: the ordinary rules apply)."""
        parts = [v.obj for v in [*args, *kwargs.values()] if v.kind == "obj" and v.obj is not None and v.obj.kind == "distribution"]
        if not parts:
            return None
        if "__opaque__" in kwargs:
            return UNKNOWN
        dev = parts[0].dev
        if dev is None or dev is TOP or not dev.known or any(p.dev != dev for p in parts[1:]):
            return UNKNOWN
        obj = Obj("distribution", qual=f"torch.distributions.{cls}", dev=dev, origin=parts[0].origin)
        obj.scalar = all(getattr(p, "scalar", False) for p in parts)  # type: ignore[attr-defined]
        for p in F.DIST_TENSOR_PROPERTIES:
            obj.attrs[p] = Val("tensor", dev, parts[0].origin, scalar=obj.scalar)
        return Val("obj", obj=obj)

    def distribution_pair(self, node, args, frame) -> Val:
        """`kl_divergence(p, q)`: computed from both distributions' parameters."""
        own = [(Val("tensor", a.obj.dev, a.obj.origin, scalar=getattr(a.obj, "scalar", False)), self.text(n))
               for a, n in zip(args[:2], node.args[:2]) if a.kind == "obj" and a.obj is not None and a.obj.kind == "distribution"
               and a.obj.dev is not None and a.obj.dev.known]
        if len(own) < 2:
            return UNKNOWN
        if self.check_mix(node, own, frame):
            return UNKNOWN
        return self.result_of([v for v, _ in own])

    def distribution_method(self, node, r: Val, name: str, args, kwargs, frame) -> Val:
        obj = r.obj
        dev, org, scalar = obj.dev, obj.origin, getattr(obj, "scalar", False)
        if dev is None or dev is TOP:
            return UNKNOWN
        own = Val("tensor", dev, org, scalar=scalar)
        if name in F.DIST_VALUE_METHODS:
            value = args[0] if args else kwargs.get("value")
            if value is None or value.kind != "tensor":
                return UNKNOWN
            vtext = self.text(node.args[0]) if node.args else "value"
            if self.check_mix(node, [(value, vtext), (own, self.text(node.func.value))], frame):
                return UNKNOWN
            return self.result_of([value, own])
        if name in F.DIST_SAMPLE_METHODS:
            shaped = bool(args) or "sample_shape" in kwargs
            return Val("tensor", dev, org, scalar=scalar and not shaped)
        if name in F.DIST_TENSOR_METHODS:
            return Val("tensor", dev, org, scalar=scalar)
        return UNKNOWN
