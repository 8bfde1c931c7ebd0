"""pytest hooks for a suite that every rank of an `mpirun` job runs: a failure on any rank ends the
whole job at once with MPI_Abort (after printing the failure), so no peer waits in a collective
for a rank that is gone and mpirun exits non-zero. Shared by tests/python and tests/torch; each
conftest registers it in pytest_configure:

    config.pluginmanager.register(AbortJobOnFailure(lambda: _world), "abort_job_on_failure")
"""

import sys

import ringsync


class AbortJobOnFailure:
    def __init__(self, world):
        self._world = world  # returns the suite's ringsync.Communicator, or None before it exists

    def _abort_job(self, what):
        world = self._world()
        rank = world.rank if world is not None else "?"
        sys.stderr.write(f"\n[rank {rank}] FAILED: {what}\n")
        sys.stderr.flush()
        ringsync.abort(1)

    def pytest_runtest_logreport(self, report):
        if report.failed:
            self._abort_job(f"{report.nodeid} ({report.when})\n{report.longreprtext}")

    def pytest_collectreport(self, report):
        if report.failed:
            self._abort_job(f"collecting {report.nodeid}\n{report.longreprtext}")

    def pytest_sessionfinish(self, session, exitstatus):
        # Anything else that makes pytest fail on one rank (no tests collected, an internal error).
        if exitstatus != 0:
            self._abort_job(f"pytest exit status {int(exitstatus)}")
