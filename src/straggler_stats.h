// Who keeps the others waiting: per rank, how often it was the last to enter a call and how long
// the others had waited for it by then (their arrival to its arrival, summed). Every rank receives
// every rank's arrival time in the call's first round, so every rank counts the same numbers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ringsync::detail {

class StragglerStats {
 public:
  explicit StragglerStats(int size = 0)
      : lastCount_(static_cast<std::size_t>(size), 0), waitedNs_(static_cast<std::size_t>(size), 0) {}

  // One call's arrival times (common clock), one per rank. Returns the rank that came last (the
  // lowest of those tied).
  int note(const std::int64_t* arrivalNs, int size) {
    int last = 0;
    for (int r = 1; r < size; ++r)
      if (arrivalNs[r] > arrivalNs[last]) last = r;
    std::int64_t waited = 0;
    for (int r = 0; r < size; ++r) waited += arrivalNs[last] - arrivalNs[r];
    noteLast(last, waited);
    return last;
  }

  // The same from a summary (recursive doubling): the rank that came last and what the others
  // waited for it in all.
  void noteLast(int last, std::int64_t waitedNs) {
    ++lastCount_[static_cast<std::size_t>(last)];
    waitedNs_[static_cast<std::size_t>(last)] += waitedNs;
    ++calls_;
  }

  std::uint64_t calls() const { return calls_; }
  const std::vector<std::uint64_t>& lastCount() const { return lastCount_; }
  const std::vector<std::int64_t>& waitedNs() const { return waitedNs_; }
  // The rank last in more than half of the calls, or -1.
  int straggler() const;
  // "straggler report (communicator 0, 400 calls with every rank's arrival time):" and a line per
  // rank; the straggler's line says so.
  std::string report(const std::string& communicator) const;

 private:
  std::uint64_t calls_ = 0;
  std::vector<std::uint64_t> lastCount_;
  std::vector<std::int64_t> waitedNs_;
};

}  // namespace ringsync::detail
