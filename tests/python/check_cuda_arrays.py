"""CUDA arrays through the Python bindings, on real device memory (label `gpu`, under mpirun).

Device memory comes from cudaMalloc through ctypes (no torch needed), exported by DLPack: so on a
GPU machine this check runs whatever else is installed, and it cannot skip there. It checks
all-reduce (closed forms, several types and ops) and broadcast on the default stream, that an
array on another rank's GPU index is refused by name, and that one rank passing host memory while
the others pass device memory is a MismatchError on every rank, and that torch (where installed)
still imports after ringsync. Without a GPU it prints SKIPPED.
Run with the CUDA build of the package (python_install_cuda) on PYTHONPATH.
"""

import ctypes
import ctypes.util
import sys

import numpy as np

from dlpack_producer import FLOAT, INT, KDL_CUDA, Producer


def load_cudart():
    names = [ctypes.util.find_library("cudart"), "libcudart.so", "libcudart.so.13", "libcudart.so.12"]
    for name in filter(None, names):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


def gpu_count(cudart):
    count = ctypes.c_int(0)
    if cudart is None or cudart.cudaGetDeviceCount(ctypes.byref(count)) != 0:
        return 0
    return count.value


class DeviceArray:
    """`values` (a numpy array) copied into cudaMalloc memory; .host() copies it back."""

    def __init__(self, cudart, values):
        self.cudart, self.dtype, self.count = cudart, values.dtype, values.size
        self.address = ctypes.c_void_p()
        check(cudart.cudaMalloc(ctypes.byref(self.address), ctypes.c_size_t(values.nbytes)), "cudaMalloc")
        check(cudart.cudaMemcpy(self.address, values.ctypes.data_as(ctypes.c_void_p), ctypes.c_size_t(values.nbytes), 1),
              "cudaMemcpy H2D")

    def dlpack(self, device_id):
        code, bits = (FLOAT, 32) if self.dtype == np.float32 else (FLOAT, 64) if self.dtype == np.float64 else (INT, 32)
        return Producer(self.address.value, (self.count,), code, bits, device=KDL_CUDA, device_id=device_id)

    def host(self):
        out = np.empty(self.count, dtype=self.dtype)
        check(self.cudart.cudaMemcpy(out.ctypes.data_as(ctypes.c_void_p), self.address, ctypes.c_size_t(out.nbytes), 2),
              "cudaMemcpy D2H")
        return out

    def free(self):
        self.cudart.cudaFree(self.address)


def check(rc, what):
    if rc != 0:
        raise RuntimeError(f"{what} failed: CUDA error {rc}")


def main():
    cudart = load_cudart()
    gpus = gpu_count(cudart)
    if gpus == 0:
        print("SKIPPED: no CUDA device (the CUDA arrays check needs a GPU)")
        return 0
    import ringsync

    if not ringsync.with_cuda:
        print("FAILED: a GPU is present but this ringsync package was built without CUDA "
              "(python_install_cuda builds the CUDA one)")
        return 1
    # torch imported after ringsync must find one NCCL both can use (ringsync/_shared_nccl.py).
    try:
        import torch  # noqa: F401
    except ModuleNotFoundError:
        pass
    except ImportError as error:
        print(f"FAILED: import torch after a CUDA ringsync: {error}")
        return 1
    comm = ringsync.Communicator()
    n, rank = comm.size, comm.rank
    device = comm.local_rank % gpus
    check(cudart.cudaSetDevice(device), "cudaSetDevice")
    failures = []

    cases = [(np.float32, "sum", n * (n + 1) / 2), (np.float32, "max", n), (np.float32, "min", 1),
             (np.float32, "avg", (n + 1) / 2), (np.float64, "prod", float(np.prod(np.arange(1, n + 1)))),
             (np.int32, "sum", n * (n + 1) // 2)]
    for dtype, op, expected in cases:
        x = DeviceArray(cudart, np.full(1000, rank + 1, dtype=dtype))
        comm.allreduce(x.dlpack(device), op=op, stream=0)  # the default stream: returns once done
        got = x.host()
        if not np.all(got == np.asarray(expected, dtype=dtype)):
            failures.append(f"allreduce {np.dtype(dtype).name} {op}: got {got[:3]}..., expected {expected}")
        x.free()

    y = DeviceArray(cudart, np.full(100, float(rank), dtype=np.float32))
    comm.broadcast(y.dlpack(device), root=n - 1, stream=0)
    if not np.all(y.host() == n - 1):
        failures.append(f"broadcast from {n - 1}: got {y.host()[:3]}")

    # The DLPack device id says GPU `device`; claiming another index is the caller's mistake, but
    # ringsync reads the pointer's real GPU, so only a genuinely different GPU is refused: check it
    # where there are two.
    if gpus > 1:
        check(cudart.cudaSetDevice((device + 1) % gpus), "cudaSetDevice")
        z = DeviceArray(cudart, np.ones(10, dtype=np.float32))
        check(cudart.cudaSetDevice(device), "cudaSetDevice")
        try:
            comm.allreduce(z.dlpack((device + 1) % gpus), stream=0)
            failures.append("a buffer on another GPU was not refused")
        except ringsync.InvalidArgument as error:
            if "GPU" not in str(error):
                failures.append(f"another GPU refused without naming it: {error}")
        z.free()

    # Host memory on rank 0, device memory elsewhere: MismatchError on every rank, naming the kind.
    if n > 1:
        host = np.ones(10, dtype=np.float32)
        w = DeviceArray(cudart, np.ones(10, dtype=np.float32))
        try:
            comm.allreduce(host if rank == 0 else w.dlpack(device), stream=0)
            failures.append("host memory on rank 0 against device memory elsewhere was not a MismatchError")
        except ringsync.MismatchError as error:
            if "device" not in str(error):
                failures.append(f"the MismatchError does not name the memory kind: {error}")
        w.free()

    for failure in failures:
        print(f"[rank {rank}] FAILED: {failure}")
    status = np.array([len(failures)], dtype=np.int32)
    comm.allreduce(status, op="max")
    if status[0] == 0 and rank == 0:
        print(f"CUDA arrays through the Python bindings: all checks passed on {n} rank(s), {gpus} GPU(s)")
    return 0 if status[0] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
