"""ProcessGroupRingsync: torch.distributed's collectives carried by one ringsync Communicator.

Each collective checks its arguments on the caller's thread (a bad call raises there, before
anything is sent), then queues one job on the group's ProgressThread and returns a RingsyncWork
that completes with that job's Future. Failures while the job runs (MismatchError, TimeoutError,
AbortedError, ...) are ringsync's exceptions, raised by Work.wait(), and carried (with ringsync's
message) by the Work's future, and so by DDP's backward.
"""

import torch
import torch.distributed as dist

from .._ringsync import InvalidArgument
from ._progress import ProgressThread
from ._work import RingsyncWork
from ._tensors import Staged, as_array, check_dtype, op_name, ringsync_op

_UNSUPPORTED = ("reduce", "gather", "scatter", "alltoall", "all_to_all_single", "alltoall_base", "send", "recv",
                "recv_anysource")


def _unsupported(name):
    def method(self, *args, **kwargs):
        raise NotImplementedError(f"ringsync backend does not implement {name} (it has allreduce, broadcast, "
                                  "allgather, all_gather_single, reduce_scatter, reduce_scatter_single, barrier); "
                                  "use a 'gloo' group for this collective")

    method.__name__ = name
    return method


def _single(tensors, call):
    if len(tensors) != 1:
        raise InvalidArgument(f"ringsync backend: {call} takes one tensor per rank, got a list of {len(tensors)}")
    return tensors[0]


def _stream_of(tensor):
    """The stream= ringsync needs for `tensor`: inside a job, the caller's stream (see ProgressThread)."""
    return torch.cuda.current_stream(tensor.device) if tensor.device.type == "cuda" else None


def _cuda_stream(tensors):
    """(devices, stream) for CUDA tensors: the caller's current stream orders the collective."""
    devices = sorted({t.device for t in tensors if t.device.type == "cuda"}, key=str)
    if not devices:
        return None, None
    if len(devices) > 1:
        raise InvalidArgument(f"ringsync backend: one collective's tensors span {devices}; use one device per rank")
    return devices, torch.cuda.current_stream(devices[0])


class ProcessGroupRingsync(dist.ProcessGroup):
    """A torch.distributed process group whose collectives run on `comm` (a ringsync.Communicator)."""

    def __init__(self, comm, rank, size):
        super().__init__(rank, size)
        self._comm = comm
        self._progress = ProgressThread(f"ringsync-progress-r{rank}")

    @property
    def communicator(self):
        return self._comm

    def getBackendName(self):  # noqa: N802 - torch's name
        return "ringsync"

    def __repr__(self):
        return f"ProcessGroupRingsync(rank={self.rank()}, size={self.size()})"

    # -- plumbing ---------------------------------------------------------------------------

    def _submit(self, job, tensors, opts):
        devices, stream = _cuda_stream(tensors)
        # async_op=False: torch waits at once, so the job may run on this thread (ProgressThread.submit).
        inline = opts is not None and not getattr(opts, "asyncOp", True)
        return RingsyncWork(self._progress.submit(job, devices, stream, inline))

    def shutdown(self):
        """Finish what is queued, stop the progress thread and let the communicator go.

        torch keeps process groups alive until the interpreter is gone; the communicator is
        released here (and at exit) so that it does not outlive ringsync's bindings.
        """
        self._progress.close()
        self._comm = None

    # -- collectives ------------------------------------------------------------------------

    def allreduce(self, tensor_list, opts=None):
        op = op_name(opts.reduceOp if opts is not None else dist.ReduceOp.SUM, "allreduce")
        return self._allreduce(list(tensor_list), op, "allreduce", opts)

    def allreduce_coalesced(self, tensor_list, opts=None):
        op = op_name(opts.reduceOp if opts is not None else dist.ReduceOp.SUM, "allreduce_coalesced")
        return self._allreduce(list(tensor_list), op, "allreduce_coalesced", opts)

    def _allreduce(self, tensors, op, call, opts):
        for t in tensors:
            check_dtype(t, call, op)
        staged = [Staged(t) for t in tensors]
        comm = self._comm

        def job():
            for s in staged:
                comm.allreduce(as_array(s.dense), op=ringsync_op(s.dense, op), stream=_stream_of(s.dense))
                s.finish()
            return tensors

        return self._submit(job, tensors, opts)

    def broadcast(self, tensor_list, opts=None):
        root = opts.rootRank if opts is not None else 0
        tensors = list(tensor_list)
        if not 0 <= root < self.size():
            raise InvalidArgument(f"ringsync backend: broadcast root={root} is not a rank of this group "
                                  f"(size {self.size()})")
        for t in tensors:
            check_dtype(t, "broadcast")
        staged = [Staged(t, copy_in=self.rank() == root) for t in tensors]
        comm = self._comm

        def job():
            for s in staged:
                comm.broadcast(as_array(s.dense), root=root, stream=_stream_of(s.dense))
                s.finish()
            return tensors

        return self._submit(job, tensors, opts)

    def allgather(self, output_tensors, input_tensors, opts=None):
        """output_tensors[0][r] = input of rank r (list form: gathered into one block, then copied out)."""
        x = _single(input_tensors, "allgather")
        outputs = list(_single(output_tensors, "allgather"))
        n = self.size()
        if len(outputs) != n:
            raise InvalidArgument(f"ringsync backend: allgather needs {n} output tensors (one per rank), "
                                  f"got {len(outputs)}")
        for i, out in enumerate(outputs):
            if out.dtype != x.dtype or out.numel() != x.numel():
                raise InvalidArgument(f"ringsync backend: allgather output {i} is {out.dtype} x {out.numel()}, "
                                      f"the input is {x.dtype} x {x.numel()}")
        check_dtype(x, "allgather")
        block = torch.empty((n, x.numel()), dtype=x.dtype, device=x.device)

        def scatter_rows():
            for r, out in enumerate(outputs):
                out.copy_(block[r].view(out.shape))
            return outputs

        return self._submit(self._gather_job(x, block, scatter_rows), [x, *outputs], opts)

    def all_gather_single(self, output, input, opts=None):  # noqa: A002 - torch's name
        """output = the inputs of ranks 0..n-1 one after another (all_gather_into_tensor)."""
        n = self.size()
        if output.dtype != input.dtype or output.numel() != n * input.numel():
            raise InvalidArgument(f"ringsync backend: all_gather_into_tensor output must hold size * input.numel() "
                                  f"= {n * input.numel()} {input.dtype} elements, has {output.numel()} {output.dtype}")
        check_dtype(input, "all_gather_into_tensor")
        staged = Staged(output, copy_in=False)

        def finish():
            staged.finish()
            return [output]

        return self._submit(self._gather_job(input, staged.dense, finish), [input, output], opts)

    _allgather_base = all_gather_single  # the name before torch 2.12

    def _gather_job(self, x, block, finish):
        """A job gathering x into the contiguous `block` (n * x.numel() elements), then returning finish().

        ringsync's all-gather takes host arrays; a CUDA tensor is gathered through host copies.
        """
        comm = self._comm
        on_device = x.device.type == "cuda"
        send = Staged(x)

        def job():
            src = send.dense.cpu() if on_device else send.dense
            dst = torch.empty(block.shape, dtype=block.dtype) if on_device else block
            comm.allgather(as_array(src), as_array(dst))
            if on_device:
                block.copy_(dst)
            return finish()

        return job

    def reduce_scatter(self, output_tensors, input_tensors, opts=None):
        """output = rank's slice of the reduction of every rank's input list.

        ringsync has no reduce-scatter of its own yet: composed from its all-reduce of the
        concatenated inputs (twice the bytes of a native reduce-scatter), keeping the slice.
        """
        op = op_name(opts.reduceOp if opts is not None else dist.ReduceOp.SUM, "reduce_scatter")
        out = _single(output_tensors, "reduce_scatter")
        inputs = list(_single(input_tensors, "reduce_scatter"))
        n = self.size()
        if len(inputs) != n:
            raise InvalidArgument(f"ringsync backend: reduce_scatter needs {n} input tensors (one per rank), "
                                  f"got {len(inputs)}")
        for i, t in enumerate(inputs):
            if t.dtype != out.dtype or t.numel() != out.numel():
                raise InvalidArgument(f"ringsync backend: reduce_scatter input {i} is {t.dtype} x {t.numel()}, "
                                      f"the output is {out.dtype} x {out.numel()}")
        check_dtype(out, "reduce_scatter", op)
        block = torch.cat([t.reshape(-1) for t in inputs])  # a copy: the inputs stay untouched
        return self._reduce_scatter(block, out, op, [out, *inputs], opts)

    def reduce_scatter_single(self, output, input, opts=None):  # noqa: A002 - torch's name
        """output = rank's slice of the reduction of input (reduce_scatter_tensor); composed like reduce_scatter."""
        op = op_name(opts.reduceOp if opts is not None else dist.ReduceOp.SUM, "reduce_scatter_tensor")
        n = self.size()
        if output.dtype != input.dtype or input.numel() != n * output.numel():
            raise InvalidArgument(f"ringsync backend: reduce_scatter_tensor input must hold size * output.numel() "
                                  f"= {n * output.numel()} {output.dtype} elements, has {input.numel()} {input.dtype}")
        check_dtype(output, "reduce_scatter_tensor", op)
        block = input.reshape(-1).clone()  # a copy: the input stays untouched
        return self._reduce_scatter(block, output, op, [output, input], opts)

    _reduce_scatter_base = reduce_scatter_single  # the name before torch 2.12

    def _reduce_scatter(self, block, out, op, tensors, opts):
        comm = self._comm
        begin = self.rank() * out.numel()

        def job():
            comm.allreduce(as_array(block), op=ringsync_op(block, op), stream=_stream_of(block))
            out.copy_(block[begin:begin + out.numel()].view(out.shape))
            return [out]

        return self._submit(job, tensors, opts)

    def barrier(self, opts=None):
        comm = self._comm

        def job():
            comm.barrier()
            return []

        return self._submit(job, [], opts)


for _name in _UNSUPPORTED:
    setattr(ProcessGroupRingsync, _name, _unsupported(_name))
