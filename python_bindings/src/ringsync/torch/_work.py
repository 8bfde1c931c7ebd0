"""The Work a ringsync collective returns: done when its job has run on the progress thread.

torch's own _create_work_from_future() would drop ringsync's errors: its wait() never raises, and
a torch.futures.Future completed with set_exception() is only an error to Python callers, not to
C++ ones such as DDP. So the job's future holds its result or a Failed(exception), and
  - wait() (what dist.all_reduce(...) and users call) raises ringsync's exception itself:
    ringsync.MismatchError, TimeoutError, ... with ringsync's message;
  - get_future() (what DDP and comm hooks chain on) is a future that torch's C++ side also sees
    failing: a RuntimeError carrying "MismatchError: <ringsync's message>".
Each raise is a fresh copy of the exception (Failed.fresh): torch's C++ futures are invisible to
Python's cycle collector, so a raised traceback that led back to the future would never be freed.
"""

import torch.distributed as dist

from ._progress import Failed


def _value_or_raise(future):
    value = future.value()
    if isinstance(value, Failed):
        raise value.fresh()
    return value


class RingsyncWork(dist.Work):
    def __init__(self, future):
        super().__init__()
        self._future = future  # completed on the progress thread: the result or a Failed
        self._chained = None

    def wait(self, timeout=None):
        value = self._future.wait()
        if isinstance(value, Failed):
            raise value.fresh()
        return True

    def is_completed(self):
        return self._future.done()

    def is_success(self):
        return self._future.done() and not isinstance(self._future.value(), Failed)

    def exception(self):
        value = self._future.value() if self._future.done() else None
        return value.error if isinstance(value, Failed) else None

    def get_future(self):
        if self._chained is None:
            self._chained = self._future.then(_value_or_raise)
        return self._chained

    def synchronize(self):
        """Host-side work has nothing to synchronise; CUDA completion is recorded on the future."""
