#include "netns_support.h"

#include <catch2/catch.hpp>

#include <cstring>

#include "closed_form.h"
#include "support/test_support.h"

namespace ringsync::netns_test {

int hostIndex() {
  char mine[MPI_MAX_PROCESSOR_NAME] = {}, first[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(mine, &length);
  std::memcpy(first, mine, sizeof first);
  MPI_Bcast(first, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);
  return std::strcmp(mine, first) == 0 ? 0 : 1;
}

int localRankOnHost() {
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int localRank = 0;
  MPI_Comm_rank(node, &localRank);
  MPI_Comm_free(&node);
  return localRank;
}

MPI_Comm interleavedAcrossHosts() {
  const int key = localRankOnHost() * 2 + hostIndex();
  MPI_Comm interleaved;
  MPI_Comm_split(MPI_COMM_WORLD, 0, key, &interleaved);
  return interleaved;
}

Options forced(Algorithm algorithm) {
  Options options = Options::fromEnvironment();
  options.algorithm = algorithm;
  return options;
}

bool exactAllreduce(Communicator& comm, DataType type, ReduceOp op, std::size_t count, bool inPlace, MPI_Comm group) {
  const int n = comm.size();
  test::TypedBuffer send(type, count), recv(type, count);
  for (std::size_t i = 0; i < count; ++i) send.set(i, closed_form::allreduceInput(op, type, comm.rank(), n, i));
  comm.allreduce(send.data(), inPlace ? send.data() : recv.data(), count, type, op);
  const test::TypedBuffer& result = inPlace ? send : recv;
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < count; ++i) wrong += result.get(i) != closed_form::allreduceExpected(op, type, n, i);
  INFO(test::describe(type, op, count, inPlace)
       << ": rank " << comm.rank() << " has " << wrong << " wrong, algorithm " << comm.lastPlacement().algorithm);
  return test::allRanks(wrong == 0 && test::identicalOnAllRanks(result.data(), result.bytes(), group), group);
}

bool mismatchNamesBoth(const std::string& what, int odd, std::size_t usualCount) {
  const bool namesOdd = what.find("rank " + std::to_string(odd) + " called") != std::string::npos;
  const bool namesUsual = what.find("count=" + std::to_string(usualCount)) != std::string::npos;
  return test::allRanks(what.find("disagree") != std::string::npos && namesOdd && namesUsual);
}

}  // namespace ringsync::netns_test
