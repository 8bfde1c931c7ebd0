"""One libnccl per process, for CUDA builds of ringsync.

A CUDA build links libnccl.so.2. PyTorch's wheels bring their own, usually newer, NCCL under the
same soname (the nvidia-nccl-cu* wheel), and a process holds one library per soname: whichever is
loaded first serves both. Loaded after ringsync's older one, `import torch` fails with missing
symbols (ncclCommResume, ...). So when that wheel is installed its library is loaded first: NCCL
keeps its ABI compatible within major version 2, and ringsync runs on the newer one.
"""

import ctypes
import importlib.util
import os


def load_the_newest_nccl():
    try:
        spec = importlib.util.find_spec("nvidia.nccl")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        path = os.path.join(folder, "lib", "libnccl.so.2")
        if os.path.exists(path):
            ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            return path
    return None
