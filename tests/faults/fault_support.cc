#include "fault_support.h"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include <unistd.h>

namespace ringsync::faults {

std::string rankList(const std::vector<int>& ranks) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text;
}

std::vector<int> ranksExcept(int size, int rank) {
  std::vector<int> ranks;
  for (int r = 0; r < size; ++r)
    if (r != rank) ranks.push_back(r);
  return ranks;
}

double maxOverRanks(double value, MPI_Comm comm) {
  double result = 0;
  MPI_Allreduce(&value, &result, 1, MPI_DOUBLE, MPI_MAX, comm);
  return result;
}

void report(const std::string& line) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) return;
  std::printf("[faults] %s\n", line.c_str());
  std::fflush(stdout);
}

StderrCapture::StderrCapture() {
  char path[] = "/tmp/ringsync-faults-stderr-XXXXXX";
  fileFd_ = mkstemp(path);
  if (fileFd_ < 0) throw std::runtime_error("StderrCapture: mkstemp failed");
  unlink(path);  // the descriptor keeps the file alive; nothing is left behind
  std::fflush(stderr);
  savedFd_ = dup(STDERR_FILENO);
  dup2(fileFd_, STDERR_FILENO);
}

StderrCapture::~StderrCapture() { stop(); }

std::string StderrCapture::stop() {
  if (savedFd_ < 0) return text_;
  std::fflush(stderr);
  dup2(savedFd_, STDERR_FILENO);
  close(savedFd_);
  savedFd_ = -1;
  lseek(fileFd_, 0, SEEK_SET);
  char chunk[4096];
  ssize_t got = 0;
  while ((got = read(fileFd_, chunk, sizeof chunk)) > 0) text_.append(chunk, static_cast<std::size_t>(got));
  close(fileFd_);
  fileFd_ = -1;
  std::fputs(text_.c_str(), stderr);  // keep the log complete
  return text_;
}

std::size_t occurrences(const std::string& text, const std::string& needle) {
  std::size_t count = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++count;
  return count;
}

}  // namespace ringsync::faults
