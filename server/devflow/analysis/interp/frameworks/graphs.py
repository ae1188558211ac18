"""Graph libraries (torch_geometric; tables framework_api.GRAPH_DATASETS / GRAPH_FIELDS /
GRAPH_MOVING_TRANSFORMS, from its wheel). A dataset's item (`dataset[0]`) is a graph object its dataset
built on the host from the files it loads: every tensor field on the cpu, unless its `transform=` may
move or rebuild it (a transform taking a device, ToDevice; anything that is not the library's own
transform): then the item is unknown. `.to(device)` / `.cuda()` move the whole graph in place (the GRAPH
batch kind); its fields (`data.x`, `data.edge_index`, `data.y` ...) are where the graph is."""

from __future__ import annotations

import ast

from devflow.analysis import framework_api as F
from devflow.analysis.lattice import CPU
from devflow.analysis.values import GRAPH, UNKNOWN, Obj, Origin, Val
from devflow.analysis.interp.frames import span_of


class GraphData:
    def new_graph_dataset(self, node, q: str) -> Val:
        if len(node.args) > 2 or any(isinstance(a, ast.Starred) for a in node.args) or \
                any(k.arg is None for k in node.keywords):
            return UNKNOWN  # a transform may be passed by position or in **kwargs
        t = next((k.value for k in node.keywords if k.arg == "transform"), None)
        if t is not None and not self._keeps_graph_device(t):
            return UNKNOWN
        name = q.rsplit(".", 1)[-1]
        org = Origin(span_of(node), f"a graph of the dataset `{name}` at line {node.lineno}, built on the cpu", "batch")
        obj = Obj("graph_dataset", qual=q)
        obj.attrs["sample"] = Val("tensor", CPU, org, batch=GRAPH)
        return Val("obj", obj=obj)

    def _keeps_graph_device(self, expr, depth: int = 0) -> bool:
        """Whether a `transform=` expression is built only from the graph library's transforms none of which
        takes a device (a name bound once in the file to such an expression counts too)."""
        if isinstance(expr, ast.Constant) and expr.value is None:
            return True
        if isinstance(expr, ast.Name) and depth < 3:
            values = [st.value for st in self.index.nodes if isinstance(st, ast.Assign) and len(st.targets) == 1
                      and isinstance(st.targets[0], ast.Name) and st.targets[0].id == expr.id]
            return len(values) == 1 and self._keeps_graph_device(values[0], depth + 1)
        if isinstance(expr, (ast.List, ast.Tuple)):
            return all(self._keeps_graph_device(e, depth) for e in expr.elts)
        if not isinstance(expr, ast.Call):
            return False
        q = self.index.qualify(self.index.dotted(expr.func) or "")
        if not q.startswith("torch_geometric.transforms.") or q in F.GRAPH_MOVING_TRANSFORMS:
            return False
        return all(self._keeps_graph_device(a, depth) for a in expr.args if isinstance(a, (ast.List, ast.Tuple, ast.Call, ast.Name)))
