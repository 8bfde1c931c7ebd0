// GradientAverager when MPI provides less than MPI_THREAD_MULTIPLE (this binary's main asks for
// MPI_THREAD_SERIALIZED): one warning per process, no progress thread, and buckets run fused inside
// synchronize() with the same exact results, whatever order gradients are marked in.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>

#include "fusion_model.h"

using namespace ringsync;
using test::Model;

namespace {

// Everything written to stderr (fd 2) while `body` runs.
template <typename Body> std::string captureStderr(Body&& body) {
  std::FILE* capture = std::tmpfile();
  REQUIRE(capture != nullptr);
  std::fflush(stderr);
  const int saved = dup(2);
  dup2(fileno(capture), 2);
  body();
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  std::string text;
  std::rewind(capture);
  for (int c; (c = std::fgetc(capture)) != EOF;) text += static_cast<char>(c);
  std::fclose(capture);
  return text;
}

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t count = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}

}  // namespace

TEST_CASE("fallback: without MPI_THREAD_MULTIPLE buckets run fused in synchronize, one warning", "[fusion]") {
  Communicator comm(MPI_COMM_WORLD);
  REQUIRE(comm.mpiThreadLevel() == MPI_THREAD_SERIALIZED);
  Model model(test::floatLayers({300, 1, 2, 3, 256, 77, 0, 1000, 64, 65, 63}));
  GradientAveragerOptions options;
  options.bucketBytes = 1024;
  options.firstBucketBytes = 256;
  options.overlap = true;  // asked for, not possible
  bool overlapping = true;
  std::string wrong;
  const std::string log = captureStderr([&] {
    for (int averagers = 0; averagers < 2; ++averagers) {
      GradientAverager averager(comm, model.buffers(), options);
      overlapping = overlapping && averager.overlapping();
      std::mt19937 random(static_cast<unsigned>(99 + 31 * comm.rank()));
      for (int step = 0; step < 3; ++step) {
        model.fill(comm.rank(), step, ReduceOp::kAvg);
        std::vector<std::size_t> order(model.size());
        std::iota(order.begin(), order.end(), 0);
        std::shuffle(order.begin(), order.end(), random);
        for (std::size_t g : order) averager.markReady(g);
        averager.synchronize();
        if (wrong.empty()) wrong = model.check(comm.size(), step, ReduceOp::kAvg);
      }
    }
  });
  INFO("stderr: " << log << "\nfirst wrong: " << wrong);
  CHECK_FALSE(overlapping);
  CHECK(occurrences(log, "needs MPI_THREAD_MULTIPLE") == 1);  // once per process, not per averager
  CHECK(log.find("MPI_THREAD_SERIALIZED") != std::string::npos);
  REQUIRE(test::allRanks(!overlapping && wrong.empty() && occurrences(log, "needs MPI_THREAD_MULTIPLE") == 1));
}

TEST_CASE("fallback: a sharded averager runs its reduce-scatters in synchronize, its gathers in the waits",
          "[fusion][shard]") {
  Communicator comm(MPI_COMM_WORLD);
  const std::vector<std::size_t> counts = {300, 1, 2, 3, 256, 77, 0, 1000, 64, 65, 63};
  Model grads(test::floatLayers(counts)), params(test::floatLayers(counts));
  GradientAveragerOptions options;
  options.bucketBytes = 1024;
  options.firstBucketBytes = 256;
  ShardedGradientAverager averager(comm, grads.buffers(), params.buffers(), options);
  std::string wrong;
  params.scramble(static_cast<std::uint8_t>(0x40 + comm.rank()));  // stale everywhere but the shards
  for (int step = 0; step < 3; ++step) {
    grads.fill(comm.rank(), step, ReduceOp::kAvg);
    for (std::size_t g = counts.size(); g-- > 0;) averager.markReady(g);
    averager.synchronize();
    std::vector<ShardRange> own;
    for (std::size_t g = 0; g < counts.size(); ++g) {
      own.push_back(averager.shard(g));
      params.copyRange(grads, g, own.back());
      averager.markUpdated(g);
    }
    if (wrong.empty()) wrong = grads.check(comm.size(), step, ReduceOp::kAvg, &own);
    // Step 0 waits tensor by tensor (the gathers run here, in order), later steps at the next markReady.
    if (step == 0)
      for (std::size_t g = 0; g < counts.size(); ++g) averager.waitForParameter(g);
    if (step == 2) averager.gatherParameters();
    if (step != 1 && wrong.empty()) wrong = params.check(comm.size(), step, ReduceOp::kAvg);
  }
  INFO("first wrong: " << wrong);
  CHECK_FALSE(averager.overlapping());
  REQUIRE(test::allRanks(!averager.overlapping() && wrong.empty()));
}
