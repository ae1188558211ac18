"""Graph libraries (torch_geometric; tables framework_api.GRAPH_DATASETS / GRAPH_FIELDS, from its wheel).
A dataset's item (`dataset[0]`) is a graph object its dataset built on the host from the files it loads:
every tensor field on the cpu. `.to(device)` / `.cuda()` move the whole graph in place (the GRAPH batch
kind); its fields (`data.x`, `data.edge_index`, `data.y` ...) are where the graph is."""

from __future__ import annotations

from devflow.analysis.lattice import CPU
from devflow.analysis.values import GRAPH, Obj, Origin, Val
from devflow.analysis.interp.frames import span_of


class GraphData:
    def new_graph_dataset(self, node, q: str) -> Val:
        name = q.rsplit(".", 1)[-1]
        org = Origin(span_of(node), f"a graph of the dataset `{name}` at line {node.lineno}, built on the cpu", "batch")
        obj = Obj("graph_dataset", qual=q)
        obj.attrs["sample"] = Val("tensor", CPU, org, batch=GRAPH)
        return Val("obj", obj=obj)
