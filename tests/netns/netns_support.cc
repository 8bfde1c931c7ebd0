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

MPI_Comm crossedAcrossHosts() {
  const int local = localRankOnHost(), host = hostIndex();  // two hosts
  const int key = local * 2 + (local % 2 == 1 ? 1 - host : host);
  MPI_Comm crossed;
  MPI_Comm_split(MPI_COMM_WORLD, 0, key, &crossed);
  return crossed;
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

bool exactReduceScatter(Communicator& comm, DataType type, ReduceOp op, std::size_t count, bool inPlace) {
  const int n = comm.size(), rank = comm.rank();
  const std::size_t total = count * static_cast<std::size_t>(n), own = count * static_cast<std::size_t>(rank);
  test::TypedBuffer send(type, total), recv(type, count);
  for (std::size_t i = 0; i < total; ++i) send.set(i, closed_form::allreduceInput(op, type, rank, n, i));
  void* out = inPlace ? static_cast<std::byte*>(send.data()) + own * dataTypeSize(type) : recv.data();
  comm.reduceScatter(send.data(), out, count, type, op);
  std::size_t wrong = 0;
  for (std::size_t j = 0; j < count; ++j)
    wrong += closed_form::loadElement(out, j, type) != closed_form::allreduceExpected(op, type, n, own + j);
  INFO(test::describe(type, op, count, inPlace)
       << ": rank " << rank << " has " << wrong << " wrong, algorithm " << comm.lastPlacement().algorithm);
  return test::allRanks(wrong == 0);
}

bool exactAllgather(Communicator& comm, DataType type, std::size_t count, bool inPlace) {
  const int n = comm.size(), rank = comm.rank();
  const std::size_t total = count * static_cast<std::size_t>(n), own = count * static_cast<std::size_t>(rank);
  test::TypedBuffer send(type, count), recv(type, total);
  recv.fill(0xA5);
  for (std::size_t j = 0; j < count; ++j) send.set(j, closed_form::rankValue(rank, j));
  if (inPlace)
    for (std::size_t j = 0; j < count; ++j) recv.set(own + j, closed_form::rankValue(rank, j));
  const void* in = inPlace ? static_cast<const std::byte*>(recv.data()) + own * dataTypeSize(type) : send.data();
  comm.allgather(in, recv.data(), count, type);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < total; ++i)
    wrong += recv.get(i) != closed_form::rankValue(static_cast<int>(i / count), i % count);
  INFO(dataTypeName(type) << " count=" << count << (inPlace ? " in place" : "") << ": rank " << rank << " has " << wrong
                          << " wrong, algorithm " << comm.lastPlacement().algorithm);
  return test::allRanks(wrong == 0);
}

}  // namespace ringsync::netns_test
