"""A minimal DLPack producer in ctypes: exports any memory with any DLPack device and dtype, so the
bindings' DLPack path (the one torch and CUDA tensors take) is tested without torch or a GPU."""

import ctypes

import numpy as np

KDL_CPU, KDL_CUDA, KDL_OPENCL = 1, 2, 4
INT, UINT, FLOAT, BFLOAT = 0, 1, 2, 4


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


_new_capsule = ctypes.pythonapi.PyCapsule_New
_new_capsule.restype = ctypes.py_object
_new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class Producer:
    """Exports `memory` (a numpy array whose bytes it shares, or an int address of memory the caller
    owns, such as a cudaMalloc pointer) through __dlpack__ only."""

    def __init__(self, memory, shape, code, bits, lanes=1, device=KDL_CPU, strides=None, device_id=0):
        self.memory = memory
        self.device_id = device_id
        self.shape = (ctypes.c_int64 * len(shape))(*shape)
        self.strides = (ctypes.c_int64 * len(shape))(*strides) if strides else None
        self.exported = []  # keep each DLManagedTensor alive: the consumer holds a pointer to it
        self.device = device
        self.dtype = DLDataType(code, bits, lanes)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        tensor = DLManagedTensor()
        tensor.dl_tensor.data = self.memory if isinstance(self.memory, int) else self.memory.ctypes.data
        tensor.dl_tensor.device = DLDevice(self.device, self.device_id)
        tensor.dl_tensor.ndim = len(self.shape)
        tensor.dl_tensor.dtype = self.dtype
        tensor.dl_tensor.shape = ctypes.cast(self.shape, ctypes.POINTER(ctypes.c_int64))
        if self.strides is not None:
            tensor.dl_tensor.strides = ctypes.cast(self.strides, ctypes.POINTER(ctypes.c_int64))
        self.exported.append(tensor)
        return _new_capsule(ctypes.addressof(tensor), b"dltensor", None)

    def __dlpack_device__(self):
        return (self.device, self.device_id)


def bfloat16_bits(values):
    """bfloat16 is the upper half of float32 (exact for small integers)."""
    return (np.asarray(values, dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)
