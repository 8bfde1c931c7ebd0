// Collectives across two simulated hosts (run_netns_test.sh puts two ranks in each of two network
// namespaces joined by a veth pair, MPI over TCP between them). Checks that the ranks really span
// two hosts, then exact all-reduce (direct and ring, in place and not), broadcast from every root
// and all-gather, so the ring's cross-host edges carry real data.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "closed_form.h"
#include "ringsync/ringsync.h"
#include "support/test_support.h"

using namespace ringsync;
using test::TypedBuffer;

TEST_CASE("netns: the ranks span two hosts, two ranks each", "[netns]") {
  Communicator comm(MPI_COMM_WORLD);
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(name, &length);
  std::vector<char> all(static_cast<std::size_t>(MPI_MAX_PROCESSOR_NAME) * static_cast<std::size_t>(comm.size()));
  MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);
  std::set<std::string> hosts;
  for (int r = 0; r < comm.size(); ++r)
    hosts.insert(std::string(&all[static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME]));
  INFO("rank " << comm.rank() << " on " << name << ", local rank " << comm.localRank() << " of " << comm.localSize());
  REQUIRE(test::allRanks(hosts.size() == 2 && comm.localSize() == comm.size() / 2));
}

TEST_CASE("netns: all-reduce is exact across the hosts", "[netns]") {
  Communicator comm(MPI_COMM_WORLD);
  const int n = comm.size();
  for (DataType type : {DataType::kFloat32, DataType::kInt64, DataType::kBFloat16}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax}) {
      for (std::size_t count : {std::size_t{0}, std::size_t{7}, std::size_t{1021}, std::size_t{300001}}) {
        for (bool inPlace : {false, true}) {
          TypedBuffer send(type, count), recv(type, count);
          for (std::size_t i = 0; i < count; ++i) send.set(i, closed_form::allreduceInput(op, type, comm.rank(), n, i));
          comm.allreduce(send.data(), inPlace ? send.data() : recv.data(), count, type, op);
          const TypedBuffer& result = inPlace ? send : recv;
          std::size_t wrong = 0;
          for (std::size_t i = 0; i < count; ++i)
            wrong += result.get(i) != closed_form::allreduceExpected(op, type, n, i);
          INFO(test::describe(type, op, count, inPlace) << ": rank " << comm.rank() << " has " << wrong << " wrong");
          REQUIRE(test::allRanks(wrong == 0 && test::identicalOnAllRanks(result.data(), result.bytes())));
        }
      }
    }
  }
}

TEST_CASE("netns: broadcast from every root and all-gather are exact", "[netns]") {
  Communicator comm(MPI_COMM_WORLD);
  const int n = comm.size();
  for (int root = 0; root < n; ++root) {
    for (std::size_t count : {std::size_t{5}, std::size_t{400003}}) {
      std::vector<std::int32_t> data(count, -1);
      if (comm.rank() == root)
        for (std::size_t i = 0; i < count; ++i)
          data[i] = static_cast<std::int32_t>(i * 3 + static_cast<std::size_t>(root));
      comm.broadcast(data.data(), count, DataType::kInt32, root);
      std::size_t wrong = 0;
      for (std::size_t i = 0; i < count; ++i)
        wrong += data[i] != static_cast<std::int32_t>(i * 3 + static_cast<std::size_t>(root));
      INFO("broadcast root " << root << " count " << count << ": rank " << comm.rank() << " has " << wrong << " wrong");
      REQUIRE(test::allRanks(wrong == 0));
    }
  }
  const std::size_t count = 50000;
  std::vector<double> mine(count), gathered(count * static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < count; ++i) mine[i] = comm.rank() * 1e6 + static_cast<double>(i);
  comm.allgather(mine.data(), gathered.data(), count, DataType::kFloat64);
  std::size_t wrong = 0;
  for (std::size_t j = 0; j < gathered.size(); ++j)
    wrong += gathered[j] != static_cast<double>(j / count) * 1e6 + static_cast<double>(j % count);
  REQUIRE(test::allRanks(wrong == 0));
}

TEST_CASE("netns: a mismatch across the hosts raises MismatchError on every rank", "[netns][faults]") {
  Communicator comm(MPI_COMM_WORLD);
  const int n = comm.size();
  // The last rank (on the second host) disagrees about the count; every rank must say so.
  const std::size_t count = comm.rank() == n - 1 ? 1000 : 1001;
  std::vector<float> data(1001, 1.0f);
  std::string what;
  try {
    comm.allreduce(data.data(), data.data(), count, DataType::kFloat32, ReduceOp::kSum);
  } catch (const MismatchError& error) {
    what = error.what();
  }
  INFO("rank " << comm.rank() << ": " << (what.empty() ? std::string("no MismatchError") : what));
  REQUIRE(test::allRanks(what.find("rank " + std::to_string(n - 1)) != std::string::npos));
  // Found from the fingerprints before any data moved: the communicator is still in step.
  std::fill(data.begin(), data.end(), static_cast<float>(comm.rank()));
  comm.allreduce(data.data(), data.data(), data.size(), DataType::kFloat32, ReduceOp::kSum);
  const float expected = static_cast<float>(n * (n - 1) / 2);
  REQUIRE(test::allRanks(std::all_of(data.begin(), data.end(), [&](float x) { return x == expected; })));
}

// RINGSYNC_CHECK_FINITE across the hosts: a NaN in one rank's input is named on every rank, on each
// path a size takes across nodes (the direct exchange, and the larger algorithms), and the
// communicator stays in step.
TEST_CASE("netns: a NaN on one host raises NonFiniteError naming its rank on every rank", "[netns][faults]") {
  Options options = Options::fromEnvironment();
  options.checkFinite = true;
  Communicator comm(MPI_COMM_WORLD, options);
  const int n = comm.size();
  for (std::size_t count : {std::size_t{16}, std::size_t{16} << 10, std::size_t{1} << 20}) {
    std::vector<float> data(count, 1.0f);
    if (comm.rank() == n - 1) data[count / 2] = std::nanf("");
    std::string what;
    try {
      comm.allreduce(data.data(), data.data(), count, DataType::kFloat32, ReduceOp::kSum);
    } catch (const NonFiniteError& error) {
      what = error.what();
    }
    INFO("count " << count << ", rank " << comm.rank() << ": "
                  << (what.empty() ? std::string("no NonFiniteError") : what));
    REQUIRE(test::allRanks(what.find("NaN or Inf on rank " + std::to_string(n - 1)) != std::string::npos));
    std::fill(data.begin(), data.end(), static_cast<float>(comm.rank()));
    comm.allreduce(data.data(), data.data(), count, DataType::kFloat32, ReduceOp::kSum);
    const float expected = static_cast<float>(n * (n - 1) / 2);
    REQUIRE(test::allRanks(std::all_of(data.begin(), data.end(), [&](float x) { return x == expected; })));
  }
}

// Reduce-scatter and all-gather across the hosts, every algorithm that can run there: the round
// (small blocks), the flat ring, and the hierarchical versions (shared memory inside each host, the
// ring between them), with enough elements for several pipelined pieces.
TEST_CASE("netns: reduce-scatter and all-gather are exact across the hosts, every algorithm", "[netns]") {
  for (Algorithm algorithm : {Algorithm::kAuto, Algorithm::kRing, Algorithm::kHierarchical, Algorithm::kDirect}) {
    Options options = Options::fromEnvironment();
    options.algorithm = algorithm;
    Communicator comm(MPI_COMM_WORLD, options);
    const int n = comm.size(), rank = comm.rank();
    const std::size_t un = static_cast<std::size_t>(n), ur = static_cast<std::size_t>(rank);
    for (DataType type : {DataType::kFloat32, DataType::kInt64, DataType::kBFloat16}) {
      for (std::size_t count : {std::size_t{0}, std::size_t{7}, std::size_t{1021}, std::size_t{300001}}) {
        for (bool inPlace : {false, true}) {
          for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax}) {
            TypedBuffer send(type, count * un), recv(type, count);
            for (std::size_t i = 0; i < count * un; ++i) send.set(i, closed_form::allreduceInput(op, type, rank, n, i));
            void* out = inPlace ? static_cast<std::byte*>(send.data()) + ur * count * dataTypeSize(type) : recv.data();
            comm.reduceScatter(send.data(), out, count, type, op);
            std::size_t wrong = 0;
            for (std::size_t j = 0; j < count; ++j)
              wrong += closed_form::loadElement(out, j, type) !=
                       closed_form::allreduceExpected(op, type, n, ur * count + j);
            INFO("reducescatter " << test::describe(type, op, count, inPlace) << " algo=" << algorithmName(algorithm)
                                  << " ran " << comm.lastPlacement().algorithm << ": rank " << rank << " has " << wrong
                                  << " wrong");
            REQUIRE(test::allRanks(wrong == 0));
          }
          TypedBuffer block(type, count), gathered(type, count * un);
          for (std::size_t j = 0; j < count; ++j) block.set(j, closed_form::rankValue(rank, j));
          if (inPlace)
            for (std::size_t j = 0; j < count; ++j) gathered.set(ur * count + j, closed_form::rankValue(rank, j));
          const void* in = inPlace ? static_cast<std::byte*>(gathered.data()) + ur * count * dataTypeSize(type)
                                   : block.data();
          comm.allgather(in, gathered.data(), count, type);
          std::size_t wrong = 0;
          for (std::size_t i = 0; i < count * un; ++i)
            wrong += gathered.get(i) != closed_form::rankValue(static_cast<int>(i / count), i % count);
          INFO("allgather " << dataTypeName(type) << " count=" << count << (inPlace ? " in place" : "")
                            << " algo=" << algorithmName(algorithm) << " ran " << comm.lastPlacement().algorithm
                            << ": rank " << rank << " has " << wrong << " wrong");
          REQUIRE(test::allRanks(wrong == 0 && test::identicalOnAllRanks(gathered.data(), gathered.bytes())));
          if (algorithm == Algorithm::kHierarchical && count > 0)
            REQUIRE(comm.lastPlacement().algorithm == "hierarchical");
        }
      }
    }
  }
}
