"""What a Python call costs on top of the C++ one, measured in one run on one array.

    mpirun -np 2 python python_bindings/bench/allreduce_overhead.py [--bytes 4|64M] [--reps N]
        [--cpp-loops build/lib/libringsync_python_loops.so]

For each repetition, in turn and after a barrier: `iterations` in-place all-reduces of the same
float32 numpy array through (1) the Python binding, comm.allreduce(x), timed in Python, (2) the C++
Communicator::allreduce in a C++ loop, and (3) MPI_Allreduce (MPI_IN_PLACE) in a C++ loop, the host
baseline. The C++ loops are bench code, built with the bench (cmake --build build --target
ringsync_python_loops) and loaded with ctypes; their Communicator has the same options from the
environment as the Python one. Rank 0 prints the medians over the repetitions
(and the minimum, which a shared, oversubscribed machine distorts least): time per call,
algbw = S/t and busbw = algbw * 2(n-1)/n as nccl-tests does, and the Python overhead (Python
minus C++ per call).
"""

import argparse
import ctypes
import pathlib
import statistics
import time

import numpy as np

import ringsync

DEFAULT_CPP_LOOPS = pathlib.Path(__file__).resolve().parents[2] / "build" / "lib" / "libringsync_python_loops.so"


def parse_bytes(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1].upper()] if text[-1].upper() in units else int(text)


def python_loop(comm, x, iterations):
    allreduce = comm.allreduce
    start = time.perf_counter()
    for _ in range(iterations):
        allreduce(x)
    return time.perf_counter() - start


class CppLoops:
    """python_bindings/bench/cpp_loops.cc through ctypes (which releases the GIL during each call)."""

    def __init__(self, path):
        if not pathlib.Path(path).exists():
            raise SystemExit(f"{path} not found: build it with `cmake --build build --target ringsync_python_loops`, "
                             "or pass --cpp-loops")
        self._lib = lib = ctypes.CDLL(str(path))
        lib.ringsync_loops_open.restype = ctypes.c_void_p
        lib.ringsync_loops_close.argtypes = [ctypes.c_void_p]
        lib.ringsync_loops_allreduce.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t]
        lib.ringsync_loops_allreduce.restype = ctypes.c_double
        lib.ringsync_loops_mpi_allreduce.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t]
        lib.ringsync_loops_mpi_allreduce.restype = ctypes.c_double
        self._comm = lib.ringsync_loops_open()  # collective, like ringsync.Communicator()
        if not self._comm:
            raise RuntimeError("ringsync_loops_open failed (see stderr)")

    def close(self):
        """Collective; before ringsync.finalize() runs at exit."""
        self._lib.ringsync_loops_close(self._comm)
        self._comm = None

    @staticmethod
    def _checked(seconds):
        if seconds < 0:
            raise RuntimeError("a C++ loop failed (see stderr)")
        return seconds

    def allreduce(self, x, iterations):
        return self._checked(self._lib.ringsync_loops_allreduce(self._comm, x.ctypes.data, x.size, iterations))

    def mpi_allreduce(self, x, iterations):
        return self._checked(self._lib.ringsync_loops_mpi_allreduce(x.ctypes.data, x.size, iterations))


def slowest(comm, seconds):
    """The slowest rank's time: a collective is as fast as its last participant."""
    t = np.array([seconds])
    comm.allreduce(t, op="max")
    return float(t[0])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bytes", default="4", help="array size, e.g. 4, 64M")
    parser.add_argument("--reps", type=int, default=0, help="repetitions (0: 101 below 1 MiB, else 11)")
    parser.add_argument("--iterations", type=int, default=0, help="calls per repetition (0: by size)")
    parser.add_argument("--cpp-loops", default=DEFAULT_CPP_LOOPS,
                        help="the C++ loops library (default: build/lib/libringsync_python_loops.so)")
    args = parser.parse_args()

    comm = ringsync.Communicator()
    cpp_loops = CppLoops(args.cpp_loops)
    measure(comm, cpp_loops, args)
    cpp_loops.close()


def measure(comm, cpp_loops, args):
    nbytes = parse_bytes(args.bytes)
    x = np.zeros(max(nbytes // 4, 1), dtype=np.float32)  # zeros: sums stay finite forever
    # Short repetitions (a fraction of a millisecond for small arrays): on a shared machine a
    # repetition that a preemption hits is an outlier, and the median of many stays clean.
    iterations = args.iterations or max(3, min(200, (256 << 20) // max(nbytes, 1) // 16))
    args.reps = args.reps or (101 if nbytes < (1 << 20) else 11)
    loops = {
        "python comm.allreduce": lambda: python_loop(comm, x, iterations),
        "C++ Communicator::allreduce": lambda: cpp_loops.allreduce(x, iterations),
        "C++ MPI_Allreduce": lambda: cpp_loops.mpi_allreduce(x, iterations),
    }
    for loop in loops.values():  # warm up: first touch, scratch buffers, connections
        loop()
    samples = {name: [] for name in loops}
    # The order rotates with each repetition, so no path always runs right after MPI_Allreduce
    # (which allocates and frees a message-sized temporary on every call).
    names = list(loops)
    for rep in range(args.reps):
        for name in names[rep % 3:] + names[:rep % 3]:
            comm.barrier()
            samples[name].append(slowest(comm, loops[name]()) / iterations)

    if comm.rank != 0:
        return
    n = comm.size
    size = x.nbytes
    print(f"# ringsync {ringsync.__version__} python allreduce overhead: {n} ranks, {size} bytes float32 sum, "
          f"{iterations} calls x {args.reps} reps (medians), {comm.options.describe()}")
    print(f"# {'path':<30} {'median us':>10} {'min us':>10} {'algbw GB/s':>11} {'busbw GB/s':>11}  (median)")
    medians = {name: statistics.median(values) for name, values in samples.items()}
    minima = {name: min(values) for name, values in samples.items()}
    for name, t in medians.items():
        algbw = size / t / 1e9
        print(f"  {name:<30} {t * 1e6:10.2f} {minima[name] * 1e6:10.2f} {algbw:11.3f} {algbw * 2 * (n - 1) / n:11.3f}")
    py, cpp, mpi = medians.values()
    py_min, cpp_min, _ = minima.values()
    print(f"# python overhead per call: {(py - cpp) * 1e6:.2f} us (median), {(py_min - cpp_min) * 1e6:.2f} us (min); "
          f"python/C++ busbw ratio {cpp / py:.3f}; python/MPI_Allreduce busbw ratio {mpi / py:.3f}")


if __name__ == "__main__":
    main()
