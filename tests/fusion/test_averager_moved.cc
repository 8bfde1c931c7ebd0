// GradientAverager on 1-4 ranks with gradients that move between steps (libtorch's zero_grad()
// frees every .grad and backward allocates new ones): markReadyAt with where a host gradient lies
// now averages it there, against closed forms, and leaves the memory it left untouched; the
// errors that remain (null data, a second mark, a sharded averager); and buckets given by the
// caller (GradientAveragerOptions::groups), honoured, checked, and agreed between ranks; a place
// that overlaps another gradient marked in the same step, refused by name.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "fusion_model.h"

using namespace ringsync;
using Catch::Matchers::Contains;
using test::Model;

namespace {

constexpr std::uint8_t kUntouched = 0x5a;  // the bytes of memory a gradient left

GradientAveragerOptions smallBuckets(bool overlap) {
  GradientAveragerOptions options;
  options.bucketBytes = 1024;
  options.firstBucketBytes = 256;
  options.overlap = overlap;
  return options;
}

// Where each of `model`'s gradients lies now.
std::vector<void*> placesOf(Model& model) {
  std::vector<void*> places;
  for (std::size_t g = 0; g < model.size(); ++g) places.push_back(model.data(g));
  return places;
}

bool allBytesAre(const void* data, std::size_t bytes, std::uint8_t value) {
  const auto* p = static_cast<const std::uint8_t*>(data);
  return std::all_of(p, p + bytes, [&](std::uint8_t b) { return b == value; });
}

// One step with every gradient marked at where `model` holds it now; "" or the first wrong value.
std::string averagedWhereTheyLie(Communicator& comm, GradientAverager& averager, Model& model, int step) {
  model.fill(comm.rank(), step, ReduceOp::kAvg);
  for (std::size_t g = model.size(); g-- > 0;) averager.markReadyAt(g, model.data(g));
  averager.synchronize();
  return model.check(comm.size(), step, ReduceOp::kAvg);
}

// Runs `call` and returns the InvalidArgument's message ("" if it did not throw one).
template <typename Call> std::string invalidArgumentOf(Call&& call) {
  try {
    call();
  } catch (const InvalidArgument& error) {
    return error.what();
  }
  return "";
}

}  // namespace

TEST_CASE("averager moved: host gradients are averaged where they lie now", "[fusion]") {
  Communicator comm(MPI_COMM_WORLD);
  const std::vector<std::size_t> counts = {300, 7, 0, 50, 1000, 3, 64};
  for (bool arena : {true, false}) {
    for (bool overlap : {false, true}) {
      INFO("arena=" << arena << " overlap=" << overlap);
      Model model(test::floatLayers(counts), arena);  // where the gradients are registered
      Model away(test::floatLayers(counts));          // where they move to
      const std::vector<void*> home = placesOf(model), elsewhere = placesOf(away);
      GradientAverager averager(comm, model.buffers(), smallBuckets(overlap));
      bool ok = true;
      std::string wrong;
      auto paths = [&] {
        std::string text;
        for (const BucketTiming& t : averager.lastStepBuckets()) text += std::string(t.path) + "; ";
        return text;
      };
      auto moveAll = [&](const std::vector<void*>& to, const std::vector<void*>& from) {
        for (std::size_t g = 0; g < counts.size(); ++g) {
          model.pointTo(g, to[g]);
          if (counts[g] > 0) std::memset(from[g], kUntouched, counts[g] * sizeof(float));
        }
      };
      auto leftUntouched = [&](const std::vector<void*>& from) {
        for (std::size_t g = 0; g < counts.size(); ++g)
          ok = ok && (counts[g] == 0 || allBytesAre(from[g], counts[g] * sizeof(float), kUntouched));
      };
      // Step 0 where they were registered; an arena's back-to-back buckets are reduced in place.
      wrong += averagedWhereTheyLie(comm, averager, model, 0);
      const std::string registeredPaths = paths();
      if (arena) CHECK_THAT(registeredPaths, Contains("in place"));
      // Step 1: every gradient moved; the memory they left is not written.
      moveAll(elsewhere, home);
      wrong += averagedWhereTheyLie(comm, averager, model, 1);
      leftUntouched(home);
      // Step 2: back where they were registered, each bucket takes the path it took at step 0.
      moveAll(home, elsewhere);
      wrong += averagedWhereTheyLie(comm, averager, model, 2);
      leftUntouched(elsewhere);
      CHECK(paths() == registeredPaths);  // every bucket bound to the registered memory again
      // Step 3: every other gradient away, the rest at home.
      for (std::size_t g = 0; g < counts.size(); g += 2) model.pointTo(g, elsewhere[g]);
      wrong += averagedWhereTheyLie(comm, averager, model, 3);
      // Step 4: markReady without a place keeps the last one.
      model.fill(comm.rank(), 4, ReduceOp::kAvg);
      averager.averageAll();
      wrong += model.check(comm.size(), 4, ReduceOp::kAvg);
      INFO(wrong);
      REQUIRE(test::allRanks(ok && wrong.empty()));
    }
  }
}

TEST_CASE("averager moved: float16 on the wire packs from where the gradients lie now", "[fusion]") {
  Communicator comm(MPI_COMM_WORLD);
  const std::vector<std::size_t> counts = {200, 30, 500};
  Model model(test::floatLayers(counts));
  Model away(test::floatLayers(counts));
  GradientAveragerOptions options = smallBuckets(true);
  options.compressFp16 = true;  // small integers survive float16 exactly
  GradientAverager averager(comm, model.buffers(), options);
  std::string wrong = averagedWhereTheyLie(comm, averager, model, 0);
  for (std::size_t g = 0; g < counts.size(); ++g) model.pointTo(g, away.data(g));
  wrong += averagedWhereTheyLie(comm, averager, model, 1);
  INFO(wrong);
  REQUIRE(test::allRanks(wrong.empty()));
}

TEST_CASE("averager moved: null data and a second mark are refused before anything is sent", "[fusion][errors]") {
  Communicator comm(MPI_COMM_WORLD);
  std::vector<float> a(100, 1.0f), b(40, 2.0f), moved(40, 3.0f);
  GradientAverager averager(comm, {{a.data(), a.size(), DataType::kFloat32}, {b.data(), b.size(), DataType::kFloat32}},
                            smallBuckets(false));
  const std::string null = invalidArgumentOf([&] { averager.markReadyAt(1, nullptr); });
  CHECK_THAT(null, Contains("gradient 1") && Contains("data is null"));
  averager.markReadyAt(1, b.data());
  const std::string twice = invalidArgumentOf([&] { averager.markReadyAt(1, moved.data()); });
  CHECK_THAT(twice, Contains("gradient 1 was already marked ready"));
  const std::string range = invalidArgumentOf([&] { averager.markReadyAt(2, moved.data()); });
  CHECK_THAT(range, Contains("index=2 is out of range"));
  // The refused calls sent nothing and changed nothing: every rank's step completes over b (a
  // refusal that had sent a message would leave the peers' next call mismatched), and `moved` is
  // not touched.
  averager.markReadyAt(0, a.data());
  averager.synchronize();
  REQUIRE(test::allRanks(a[99] == 1.0f && b[0] == 2.0f && moved[0] == 3.0f));
}

TEST_CASE("averager moved: a place overlapping another gradient marked in the step is refused by name",
          "[fusion][errors]") {
  Communicator comm(MPI_COMM_WORLD);
  const float mine = static_cast<float>(comm.rank() + 1), average = static_cast<float>(comm.size() + 1) / 2;
  std::vector<float> a(100), b(40), c(60), pool(200), big(300);
  GradientAverager averager(comm,
                            {{a.data(), a.size(), DataType::kFloat32},
                             {b.data(), b.size(), DataType::kFloat32},
                             {c.data(), c.size(), DataType::kFloat32}},
                            smallBuckets(false));
  // Every rank fills its gradients with rank + 1: each element is averaged to (n+1)/2 exactly.
  auto fill = [&](std::initializer_list<std::vector<float>*> buffers) {
    for (std::vector<float>* v : buffers) std::fill(v->begin(), v->end(), mine);
  };
  auto averaged = [&](const float* data, std::size_t count) {
    return std::all_of(data, data + count, [&](float x) { return x == average; });
  };
  // Step 0 where they were registered: nothing has moved, nothing is tracked.
  fill({&a, &b, &c});
  averager.averageAll();
  bool ok = averaged(a.data(), a.size()) && averaged(b.data(), b.size()) && averaged(c.data(), c.size());
  // Step 1: gradient 0 moves into the pool; gradient 1 onto part of it is refused, naming both.
  fill({&pool, &big, &c});
  averager.markReadyAt(0, pool.data());
  const std::string onMoved = invalidArgumentOf([&] { averager.markReadyAt(1, pool.data() + 50); });
  CHECK_THAT(onMoved, Contains("gradient 1 at") && Contains("overlaps gradient 0 at") && Contains("(400 bytes)"));
  // The refusal marked nothing: gradient 1 can still be marked, at a place of its own.
  averager.markReadyAt(1, big.data());
  averager.markReadyAt(2, c.data());
  averager.synchronize();
  ok = ok && averaged(pool.data(), 100) && averaged(big.data(), 40) && averaged(c.data(), c.size());
  // Step 2: gradient 2 is marked where it was registered; gradient 0 moved into it is refused, and so
  // is gradient 1 marked without a place when gradient 0 moved onto it (its place is still big[0, 40)).
  fill({&big, &b, &c});
  averager.markReady(2);
  const std::string onRegistered = invalidArgumentOf([&] { averager.markReadyAt(0, c.data() + 10); });
  CHECK_THAT(onRegistered, Contains("gradient 0 at") && Contains("overlaps gradient 2 at"));
  averager.markReadyAt(0, big.data() + 20);  // over gradient 1's place, but 1 is not marked yet
  const std::string unmovedOnMoved = invalidArgumentOf([&] { averager.markReady(1); });
  CHECK_THAT(unmovedOnMoved, Contains("::markReady: gradient 1 at") && Contains("overlaps gradient 0 at"));
  averager.markReadyAt(1, b.data());
  averager.synchronize();
  ok = ok && averaged(big.data() + 20, 100) && averaged(b.data(), b.size()) && averaged(c.data(), c.size());
  // Step 3 (libtorch's pattern): a gradient takes the memory another held last step before that one
  // is marked; it moves when it is, and nothing overlaps.
  fill({&big, &a, &b});
  averager.markReadyAt(2, big.data() + 20);  // gradient 0's place until it is marked below
  averager.markReadyAt(1, b.data());
  averager.markReadyAt(0, a.data());
  averager.synchronize();
  ok = ok && averaged(big.data() + 20, 60) && averaged(a.data(), a.size()) && averaged(b.data(), b.size());
  REQUIRE(test::allRanks(ok));
}

TEST_CASE("averager moved: a sharded averager's gradients stay where they were registered", "[fusion][errors]") {
  Communicator comm(MPI_COMM_WORLD);
  std::vector<float> gradient(64, 1.0f), parameter(64, 0.0f), moved(64, 3.0f);
  ShardedGradientAverager averager(comm, {{gradient.data(), gradient.size(), DataType::kFloat32}},
                                   {{parameter.data(), parameter.size(), DataType::kFloat32}}, smallBuckets(false));
  const std::string message = invalidArgumentOf([&] { averager.markReadyAt(0, moved.data()); });
  INFO(message);
  CHECK_THAT(message, Contains("gradient 0 now lies at") && Contains("sharded averager"));
  averager.markReadyAt(0, gradient.data());
  averager.synchronize();
  averager.gatherParameters();
  REQUIRE(test::allRanks(moved[0] == 3.0f));
}

TEST_CASE("averager groups: the buckets given are the buckets used", "[fusion]") {
  Communicator comm(MPI_COMM_WORLD);
  Model model(test::floatLayers({10, 256, 20, 256, 1000, 5}));
  GradientAveragerOptions options = smallBuckets(true);
  options.groups = {{5, 2}, {0, 1}, {3, 4}};  // any order inside a group; not contiguous indices
  GradientAverager averager(comm, model.buffers(), options);
  // Launch order: by lowest member, highest first: {3, 4}, then {2, 5}, then {0, 1}.
  CHECK(averager.bucketAssignment() == std::vector<std::size_t>{2, 2, 1, 0, 0, 1});
  std::string wrong;
  for (int step = 0; step < 2; ++step) {
    model.fill(comm.rank(), step, ReduceOp::kAvg);
    averager.averageAll();
    wrong += model.check(comm.size(), step, ReduceOp::kAvg);
  }
  const std::vector<BucketTiming> timings = averager.lastStepBuckets();
  REQUIRE(timings.size() == 3);
  CHECK(timings[0].bytes == (256 + 1000) * sizeof(float));
  CHECK(timings[1].bytes == (20 + 5) * sizeof(float));
  INFO(wrong);
  REQUIRE(test::allRanks(wrong.empty()));
}

TEST_CASE("averager groups: invalid groups are refused by name", "[fusion][errors]") {
  Communicator comm(MPI_COMM_WORLD);
  std::vector<float> a(10), b(20), c(30);
  std::vector<double> d(5);
  const std::vector<GradientBuffer> gradients = {{a.data(), a.size(), DataType::kFloat32},
                                                 {b.data(), b.size(), DataType::kFloat32},
                                                 {c.data(), c.size(), DataType::kFloat32},
                                                 {d.data(), d.size(), DataType::kFloat64}};
  auto refusal = [&](std::vector<std::vector<std::size_t>> groups) {
    GradientAveragerOptions options;
    options.groups = std::move(groups);
    return invalidArgumentOf([&] { GradientAverager averager(comm, gradients, options); });
  };
  CHECK_THAT(refusal({{0, 1}, {}, {2}, {3}}), Contains("groups[1] is empty"));
  CHECK_THAT(refusal({{0, 1}, {2, 7}, {3}}), Contains("groups[1] names gradient 7") && Contains("4 gradients"));
  CHECK_THAT(refusal({{0, 1}, {1, 2}, {3}}), Contains("gradient 1 is in groups[0] and groups[1]"));
  CHECK_THAT(refusal({{0, 1}, {3}}), Contains("gradient 2 is in no group"));
  CHECK_THAT(refusal({{0, 1, 2, 3}}),
             Contains("groups[0] mixes gradient 0 (float32") && Contains("gradient 3 (float64"));
  const std::string fine = refusal({{3}, {0, 1, 2}});
  CHECK(fine.empty());
}

TEST_CASE("averager groups: ranks that give other groups get MismatchError naming them", "[fusion][errors]") {
  Communicator comm(MPI_COMM_WORLD);
  if (comm.size() == 1) {
    SUCCEED("one rank agrees with itself: nothing to check");
    return;
  }
  Model model(test::floatLayers({10, 20, 30}));
  GradientAveragerOptions options = smallBuckets(false);
  options.groups = comm.rank() == 0 ? std::vector<std::vector<std::size_t>>{{0, 1}, {2}}
                                    : std::vector<std::vector<std::size_t>>{{0}, {1, 2}};
  GradientAverager averager(comm, model.buffers(), options);
  std::string message;
  try {
    averager.averageAll();
  } catch (const MismatchError& error) {
    message = error.what();
  }
  INFO(message);
  REQUIRE(test::allRanks(message.find("rank 1") != std::string::npos &&
                         message.find("groups differ") != std::string::npos));
}
