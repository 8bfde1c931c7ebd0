// Backend choice as a user sees it, on any machine: RINGSYNC_BACKEND=nccl|staged cannot serve host
// buffers and says so by name, before anything is sent; the route table of src/backend_selection
// (soft placement) for every memory kind and forced backend.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>
#include <vector>

#include "ringsync/ringsync.h"
#include "src/backend_selection.h"
#include "support/test_support.h"

using namespace ringsync;
using detail::MemoryKind;
using detail::Route;

namespace {

Options forced(BackendChoice backend) {
  Options options;
  options.backend = backend;
  return options;
}

// Runs `call`; returns the BackendError's message, or "" when something else happened.
template <typename Call> std::string backendErrorOf(Call&& call) {
  try {
    call();
  } catch (const BackendError& error) {
    return error.what();
  } catch (const std::exception& error) {
    return std::string("unexpected: ") + error.what();
  }
  return "no error";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("backend: a forced device backend refuses host buffers by name, touching nothing", "[backend]") {
  for (BackendChoice backend : {BackendChoice::kNccl, BackendChoice::kStaged}) {
    const std::string name = std::string("RINGSYNC_BACKEND=") + backendName(backend);
    Communicator comm(MPI_COMM_WORLD, forced(backend));
    std::vector<float> data(33, 1.5f), out(33, -1.0f);
    const std::string allreduceError = backendErrorOf(
        [&] { comm.allreduce(data.data(), out.data(), data.size(), DataType::kFloat32, ReduceOp::kSum); });
    const std::string broadcastError = backendErrorOf(
        [&] { comm.broadcast(data.data(), data.size(), DataType::kFloat32, 0); });
    INFO(allreduceError << " | " << broadcastError);
    bool ok = contains(allreduceError, name) && contains(allreduceError, "allreduce") &&
              contains(allreduceError, "host buffer") && contains(broadcastError, name) &&
              contains(broadcastError, "broadcast");
    // Refused before any message: no call was numbered, nothing aborted, buffers untouched.
    ok = ok && comm.callCount() == 0 && !comm.aborted() && out[0] == -1.0f && data[32] == 1.5f;
    REQUIRE(test::allRanks(ok));
  }
}

TEST_CASE("backend: RINGSYNC_BACKEND from the environment is what refuses", "[backend]") {
  for (const char* value : {"nccl", "staged"}) {
    setenv("RINGSYNC_BACKEND", value, 1);
    const Options options = Options::fromEnvironment();
    unsetenv("RINGSYNC_BACKEND");
    Communicator comm(MPI_COMM_WORLD, options);
    int x = comm.rank();
    const std::string error = backendErrorOf([&] { comm.allreduce(&x, &x, 1, DataType::kInt32, ReduceOp::kMax); });
    INFO(error);
    REQUIRE(test::allRanks(contains(error, std::string("RINGSYNC_BACKEND=") + value) && x == comm.rank()));
  }
}

TEST_CASE("backend: host buffers take the host ring under auto and ring", "[backend]") {
  for (BackendChoice backend : {BackendChoice::kAuto, BackendChoice::kRing}) {
    Communicator comm(MPI_COMM_WORLD, forced(backend));
    std::vector<std::int64_t> data(1000, comm.rank() + 1);
    comm.allreduce(data.data(), data.data(), data.size(), DataType::kInt64, ReduceOp::kSum);
    const std::int64_t n = comm.size();
    const Placement placement = comm.lastPlacement();
    REQUIRE(test::allRanks(data[999] == n * (n + 1) / 2 && placement.backend == "host-ring" && placement.device == -1));
  }
}

TEST_CASE("backend: route table (soft placement)", "[backend][unit]") {
  auto route = [](MemoryKind send, MemoryKind recv, BackendChoice forcedBackend, bool ncclUsable) {
    return detail::chooseRoute({"allreduce", send, recv, forcedBackend, ncclUsable, "no GPU here"});
  };
  const MemoryKind host = MemoryKind::kHost, device = MemoryKind::kDevice;
  CHECK(route(host, host, BackendChoice::kAuto, true) == Route::kHostRing);
  CHECK(route(device, device, BackendChoice::kAuto, true) == Route::kNccl);
  CHECK(route(device, device, BackendChoice::kAuto, false) == Route::kStaged);
  CHECK(route(device, device, BackendChoice::kStaged, true) == Route::kStaged);
  CHECK(route(device, device, BackendChoice::kNccl, true) == Route::kNccl);
  CHECK_THROWS_AS(route(device, device, BackendChoice::kRing, true), InvalidArgument);
  CHECK_THROWS_AS(route(host, device, BackendChoice::kAuto, true), InvalidArgument);
  CHECK_THROWS_AS(route(device, host, BackendChoice::kAuto, true), InvalidArgument);
  CHECK_THROWS_WITH(route(device, device, BackendChoice::kNccl, false),
                    Catch::Contains("RINGSYNC_BACKEND=nccl") && Catch::Contains("no GPU here"));
  CHECK_THROWS_WITH(route(host, host, BackendChoice::kStaged, false), Catch::Contains("RINGSYNC_BACKEND=staged"));
}
