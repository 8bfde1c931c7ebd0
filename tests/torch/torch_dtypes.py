"""The torch dtypes the backend carries, with the numpy dtype their closed-form values are built in."""

import numpy as np
import torch

# (torch dtype, numpy dtype of the closed-form inputs): bfloat16's values are small integers,
# built in float32 and converted exactly.
DTYPES = [
    (torch.float32, np.float32),
    (torch.float64, np.float64),
    (torch.float16, np.float16),
    (torch.bfloat16, np.float32),
    (torch.int8, np.int8),
    (torch.uint8, np.uint8),
    (torch.int32, np.int32),
    (torch.int64, np.int64),
]
if hasattr(torch, "uint32"):
    DTYPES += [(torch.uint32, np.uint32), (torch.uint64, np.uint64)]

OPS = {"sum": "SUM", "avg": "AVG", "prod": "PRODUCT", "min": "MIN", "max": "MAX"}


def ids(entry):
    return str(entry[0]).replace("torch.", "")


def to_torch(array, dtype):
    """The numpy closed-form values as a torch tensor of `dtype` (exact: small integers)."""
    return torch.from_numpy(np.ascontiguousarray(array)).to(dtype)


def to_numpy(tensor, numpy_dtype):
    """A tensor's values as numpy (bfloat16 through float32, exact for these values)."""
    if tensor.dtype == torch.bfloat16:
        return tensor.float().numpy().astype(numpy_dtype)
    return tensor.numpy()
