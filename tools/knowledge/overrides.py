"""What the generator cannot read from torch's stubs or probe on the meta device, each with the
documented behaviour that decides it. Kept small: everything else is generated."""

# Tensor methods whose result is on another device than the receiver, where the stub says only
# "-> Tensor" and the meta probe cannot run (no cuda here; meta -> cpu copies are refused).
DEVICE_MOVING_METHODS = {
    "cpu": "Returns a copy of this object in CPU memory (torch.Tensor.cpu docs)",
    "type": "a legacy type string names the device (torch.cuda.FloatTensor)",
}
# Tensor methods that the engine does not follow as tensor results although they return one.
NON_TENSOR_METHODS = {
    "backward": "returns None",
    "register_hook": "returns a handle",
    "storage": "returns a TypedStorage, not a tensor",
    "nonzero_static": "kept out of device checks: a fixed-size result filled with fill_value",
    "__len__": "returns an int",
    "type_as": "self.type(tensor.type()): the result is on the argument's device, not the receiver's",
}
# Ops on a list of tensors that return one per input (so not read as combining) yet check devices.
SEQUENCE_OPS = {
    "meshgrid": "aten meshgrid: TORCH_CHECK that all tensors have the same device",
}
# Calls that return a Python bool (so read as non-tensor by their annotations) yet compare two tensors
# element by element: their tensors must share a device.
SAME_DEVICE_PREDICATES = {
    "equal": "at::equal: TORCH_CHECK that both tensors are on the same device (eq(...).all() before 1.13)",
    "allclose": "isclose(...).all(): an element-wise TensorIterator op over both tensors",
}
# torch.* calls that take tensors on several devices by design or are not ops on tensors.
MIXING_OK = {
    "save": "serialises tensors from any device",
    "isclose": "comparison helper; its 0-dim/scalar operands are common and not tracked precisely",
    "testing": "torch.testing.* compares across devices explicitly",
    "pack_padded_sequence": "lengths must be on the cpu while the data is on the accelerator",
}
