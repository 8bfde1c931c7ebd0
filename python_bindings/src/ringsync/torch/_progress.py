"""The progress thread: the one thread that calls the ringsync communicator of a process group.

Collectives are queued in the order the caller issues them and run one after another on this
thread, so every rank issues them to ringsync in the same order (the order torch and DDP already
guarantee), while the caller goes on: DDP's backward keeps computing gradients while the
previous bucket is being all-reduced (the bindings release the GIL during communication).
A job's result or exception completes its torch Future on this thread; DDP's callbacks attached
to the future run here too, as they run on Gloo's worker threads. A synchronous call that finds
nothing queued runs on the caller's thread instead (see submit).
"""

import copy
import queue
import threading

import torch

_STOP = object()


class ProgressThread:
    def __init__(self, name):
        self._jobs = queue.SimpleQueue()
        self._closed = False
        # _pending counts jobs queued or running (under _state, held only for a moment);
        # _running is held while a job runs, on this thread or inline on a caller's.
        self._state = threading.Lock()
        self._running = threading.Lock()
        self._pending = 0
        # A daemon, so an interpreter that exits with work still queued (after an error) is not
        # kept alive by it; close() is the orderly way out.
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, job, devices=None, stream=None, inline=False):
        """Queue `job()` (it returns the future's value) and return the torch Future it completes.

        inline: the caller is going to wait for the result at once (torch's async_op=False).
        If nothing is queued or running, the job then runs right here on the caller's thread:
        the order is the same, and the two thread hand-offs (most of a small collective's
        time) are saved. devices/stream: for CUDA tensors, the future records its completion on
        `stream` (the caller's current stream, on which ringsync ordered the collective).
        """
        if self._closed:
            from .._ringsync import AbortedError

            raise AbortedError("ringsync backend: this process group was shut down")
        future = torch.futures.Future(devices=devices) if devices else torch.futures.Future()
        with self._state:
            run_here = inline and self._pending == 0
            self._pending += 1
            if not run_here:
                self._jobs.put((job, future, stream))
        if run_here:
            self._execute(job, future, stream)
        return future

    def close(self, timeout_seconds=None):
        """Let the queued jobs finish, then stop the thread (idempotent)."""
        if not self._closed:
            self._closed = True
            self._jobs.put(_STOP)
        if self._thread is not threading.current_thread():
            self._thread.join(timeout_seconds)

    def _run(self):
        while True:
            item = self._jobs.get()
            if item is _STOP:
                return
            job, future, stream = item
            del item  # drop the tensors with the job, not at the next get()
            self._execute(job, future, stream)
            del job, future

    def _execute(self, job, future, stream):
        if stream is None:
            with self._running:
                value, error = _run(job)
        else:
            # The job's copies, the collective and the future's completion event are all
            # ordered on the caller's stream, as NCCL orders its kernels.
            with torch.cuda.stream(stream), self._running:
                value, error = _run(job)
        with self._state:
            self._pending -= 1
        # Outside the locks: DDP's callbacks run here and may issue the next collective.
        if stream is None:
            future.set_result(value if error is None else Failed(error))
        else:
            with torch.cuda.stream(stream):
                future.set_result(value if error is None else Failed(error))


class Failed:
    """A job's exception, as the value of its future (see RingsyncWork for why not set_exception)."""

    __slots__ = ("error",)

    def __init__(self, error):
        self.error = error

    def fresh(self):
        """A new exception of the same type and message, to raise: the stored one is never raised
        again, so its traceback never grows frames that point back at the future."""
        try:
            return copy.copy(self.error)
        except Exception:  # noqa: BLE001 - an exception type that cannot be copied
            return RuntimeError(f"{type(self.error).__name__}: {self.error}")


def _run(job):
    """(job(), None) or (None, the exception job raised, without its traceback).

    Only copies of the exception are ever raised to the caller (Failed.fresh), so its traceback
    would show nothing; kept, it would hold the frames of the job and of this thread, and with
    them the communicator and the tensors, for as long as torch keeps the Work (its flight
    recorder keeps recent ones): nanobind then reports the communicator leaked at exit.
    """
    try:
        return job(), None
    except BaseException as error:  # noqa: BLE001 - every failure belongs to the caller
        return None, error.with_traceback(None)
