"""torch tensors and reduce ops as ringsync sees them: the array handed to the bindings, the op name.

Every check here runs on the caller's thread, before anything is queued, so a rank with bad input
fails at the call (as Gloo does) and never sends half a collective.
"""

import torch
import torch.distributed as dist

from .._ringsync import InvalidArgument

# torch dtypes ringsync reduces natively (the bindings name them the same way).
_NATIVE = {
    torch.int8, torch.uint8, torch.int32, torch.int64, torch.float16, torch.bfloat16,
    torch.float32, torch.float64,
}
# torch >= 2.3 has unsigned 32/64-bit tensors; ringsync reduces them too.
for _name in ("uint32", "uint64"):
    if hasattr(torch, _name):
        _NATIVE.add(getattr(torch, _name))

_OPS = {
    dist.ReduceOp.SUM: "sum",
    dist.ReduceOp.AVG: "avg",
    dist.ReduceOp.PRODUCT: "prod",
    dist.ReduceOp.MIN: "min",
    dist.ReduceOp.MAX: "max",
}
# bool: sum and max are logical or, product and min logical and (torch's own meaning for bool);
# reduced as 0/1 bytes.
_BOOL_OPS = {"sum": "max", "max": "max", "prod": "min", "min": "min"}


def op_name(reduce_op, call):
    """A torch ReduceOp (or its RedOpType) -> ringsync's op name; anything else raises naming it."""
    kind = getattr(reduce_op, "op", reduce_op)
    for known, name in _OPS.items():
        if kind == known:
            return name
    raise InvalidArgument(f"ringsync backend: {call} with ReduceOp.{getattr(kind, 'name', kind)} is not supported "
                          "(ringsync reduces SUM, AVG, PRODUCT, MIN, MAX)")


def check_dtype(tensor, call, op=None):
    """Raise InvalidArgument unless ringsync can carry `tensor` (for `op`, when it reduces)."""
    dtype = tensor.dtype
    if dtype in _NATIVE:
        return
    if dtype == torch.bool:
        if op is None or op in _BOOL_OPS:
            return
        raise InvalidArgument(f"ringsync backend: {call} of a bool tensor with op '{op}' is not defined "
                              "(sum/max are logical or, prod/min logical and)")
    if dtype.is_complex:
        if op is None or op in ("sum", "avg"):
            return
        raise InvalidArgument(f"ringsync backend: {call} of a {dtype} tensor with op '{op}' is not defined "
                              "(complex tensors are reduced as their real and imaginary parts: sum, avg)")
    raise InvalidArgument(f"ringsync backend: {call} of a {dtype} tensor: ringsync carries int8, uint8, int32, "
                          "uint32, int64, uint64, float16, bfloat16, float32, float64, bool and complex "
                          "(as float pairs); convert the tensor (e.g. int16 -> int32) first")


def ringsync_op(tensor, op):
    """The op ringsync applies to the bytes of `tensor` for torch's `op`."""
    return _BOOL_OPS[op] if tensor.dtype == torch.bool else op


def as_array(tensor):
    """The object the bindings import, sharing `tensor`'s memory (contiguous, no grad).

    numpy's buffer protocol is the cheap route (~1 us against ~10 us for torch's __dlpack__);
    numpy has no bfloat16, and CUDA tensors need DLPack, so those go as tensors.
    """
    tensor = tensor.detach()
    if tensor.dtype == torch.bool:
        tensor = tensor.view(torch.uint8)
    elif tensor.dtype.is_complex:
        tensor = torch.view_as_real(tensor)
    if tensor.device.type != "cpu" or tensor.dtype == torch.bfloat16:
        return tensor
    return tensor.numpy()


class Staged:
    """A contiguous stand-in for `tensor`: the tensor itself, or a copy written back by finish().

    ringsync reduces one dense block in place; a non-contiguous tensor (a transposed view, a
    strided slice) is reduced through a contiguous copy and the result copied back into it.
    """

    __slots__ = ("tensor", "dense")

    def __init__(self, tensor, copy_in=True):
        self.tensor = tensor
        if tensor.is_contiguous():
            self.dense = tensor
        elif copy_in:
            self.dense = tensor.contiguous()
        else:
            self.dense = torch.empty_like(tensor, memory_format=torch.contiguous_format)

    def finish(self):
        if self.dense is not self.tensor:
            self.tensor.copy_(self.dense)
