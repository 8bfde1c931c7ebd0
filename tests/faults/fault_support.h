// Helpers for the fault-injection tests: run one call and record how it ended and how long it
// took, capture what the library logs to stderr, build the exact texts the errors must contain, and
// report measured times-to-error on stdout (rank 0) so `ctest -V` shows them.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include <mpi.h>

#include "ringsync/errors.h"

namespace ringsync::faults {

// How a call ended: `error` is "" when it returned, else the ringsync error name
// ("TimeoutError", ...) or "std::exception" for anything outside the family.
struct Outcome {
  std::string error;
  std::string message;
  double seconds = 0;
  bool returned() const { return error.empty(); }
};

template <typename Call> Outcome attempt(Call&& call) {
  const auto start = std::chrono::steady_clock::now();
  Outcome outcome;
  try {
    call();
  } catch (const Error& error) {
    outcome.error = errorCodeName(error.code());
    outcome.message = error.what();
  } catch (const std::exception& error) {
    outcome.error = "std::exception";
    outcome.message = error.what();
  }
  outcome.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return outcome;
}

// "rank 2" / "ranks 0, 1, 3": how the library's messages list ranks.
std::string rankList(const std::vector<int>& ranks);
// Every rank of [0, size) except `rank`.
std::vector<int> ranksExcept(int size, int rank);

// The largest `value` over the ranks of `comm` (every rank gets it).
double maxOverRanks(double value, MPI_Comm comm = MPI_COMM_WORLD);

// Rank 0 prints "[faults] <line>" on stdout: the figures the report quotes (time-to-error).
void report(const std::string& line);

// Redirects this process's stderr (fd 2) into a temporary file for the capture's lifetime, so a
// test can read what the library logged; the original stderr is restored by stop() or the
// destructor, and everything captured is echoed to it then (nothing is hidden from the log).
class StderrCapture {
 public:
  StderrCapture();
  ~StderrCapture();
  StderrCapture(const StderrCapture&) = delete;
  StderrCapture& operator=(const StderrCapture&) = delete;

  // Restores stderr and returns what was written while captured.
  std::string stop();

 private:
  int savedFd_ = -1;
  int fileFd_ = -1;
  std::string text_;
};

// How many times `needle` occurs in `text`.
std::size_t occurrences(const std::string& text, const std::string& needle);

}  // namespace ringsync::faults
