"""Image preprocessing: torchvision's transforms (tables framework_api.TO_TENSOR_TRANSFORMS /
TRANSFORM_COMPOSERS, from its wheel). A pipeline that turns the host image it is given (a PIL image,
a numpy array) into a tensor makes it on the cpu: `preprocess(Image.open(p)).unsqueeze(0)` fed to a
model on the GPU is an input left on the cpu. Given a tensor, a transform keeps its device.
A torchvision dataset (a VisionDataset) applies its `transform=` to each image it loads from disk: with a
tensor-making transform, `ds[i]` is `(image, target)` with the image a cpu tensor."""

from __future__ import annotations

from devflow.analysis import framework_api as F
from devflow.analysis.lattice import CPU
from devflow.analysis.values import UNKNOWN, Obj, Origin, Val
from devflow.analysis.interp.frames import span_of


class ImageTransforms:
    def new_transform(self, node, last: str, args) -> Val:
        """A torchvision transform built here; a composer makes tensors when one of its transforms does."""
        makes = last in F.TO_TENSOR_TRANSFORMS
        if last in F.TRANSFORM_COMPOSERS and args and args[0].kind == "obj" and args[0].obj is not None:
            makes = any(_makes_tensor(v) for v in args[0].obj.items)
        obj = Obj("transform", qual=last)
        obj.attrs["to_tensor"] = Val("const", const=makes)
        return Val("obj", obj=obj)

    def new_vision_dataset(self, node, last: str, kwargs) -> Val:
        """`torchvision.datasets.X(..., transform=t)`: its items are `(t(image), target)`, the image loaded on the host."""
        t = kwargs.get("transform")
        if t is None or not _makes_tensor(t):
            return UNKNOWN
        org = Origin(span_of(node), f"an image of the dataset `{last}` at line {node.lineno}, made a cpu tensor by its "
                                    f"transform", "batch")
        obj = Obj("vision_dataset", qual=last)
        obj.attrs["sample"] = Val("obj", obj=Obj("tuple", items=[Val("tensor", CPU, org), UNKNOWN]))
        return Val("obj", obj=obj)

    def apply_transform(self, node, fval: Val, args) -> Val:
        if not args:
            return UNKNOWN
        image = args[0]
        if image.kind == "tensor":
            return Val("tensor", image.dev, image.origin, text=self.text(node))  # a transform keeps the device
        if _makes_tensor(fval) and image.kind == "obj" and image.obj is not None and image.obj.kind == "host":
            return Val("tensor", CPU, Origin(span_of(node), f"made on cpu by `{self.text(node.func)}()` at line "
                                                            f"{node.lineno} from an image on the host"), text=self.text(node))
        return UNKNOWN


def _makes_tensor(v: Val) -> bool:
    flag = v.obj.attrs.get("to_tensor") if v.kind == "obj" and v.obj is not None and v.obj.kind == "transform" else None
    return flag is not None and flag.const is True
