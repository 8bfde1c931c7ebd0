// The all-reduce over a ScatteredBuffer (the GradientAverager's buckets, reduced where the
// gradients lie): on 1-4 ranks, for spans of every shape around the split's chunk boundaries
// (empty, single elements, one span across several chunks, many spans inside one chunk), every
// op, integer, float and half types: exact closed-form results, the same bits as the contiguous
// all-reduce of the same array, and which path ran (in place for one span or through split, packed
// for other algorithms); an array longer than one round goes through split in pieces, in place.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "closed_form.h"
#include "collectives/scattered_buffer.h"
#include "ringsync/ringsync.h"
#include "src/core_access.h"
#include "support/test_support.h"

using namespace ringsync;
using ringsync::test::TypedBuffer;

namespace {

struct Layout {
  const char* name;
  std::vector<std::size_t> spans;  // element counts, in index order
  bool splitSized;                 // large enough for the split all-reduce on one node (n >= 2)
};

std::vector<Layout> layouts() {
  std::vector<std::size_t> tinyThenLarge(50, 1);
  tinyThenLarge.push_back(40000);
  return {
      {"uneven spans with empty ones", {5000, 0, 3, 12000, 1, 7777, 0, 20000}, true},
      {"many tiny spans, then one across every chunk", tinyThenLarge, true},
      {"many spans inside each chunk", std::vector<std::size_t>(200, 97), true},
      {"one span", {30011}, true},
      {"a small array (one direct round, packed)", {3, 0, 10, 100}, false},
      // 2.2 M elements: more than one round's piece of split at 2-4 ranks for every 4- and 8-byte
      // type (a piece boundary falls inside a span), reduced in pieces where the spans lie.
      {"spans past one round (split in pieces)", {700001, 0, 5, 1500000}, true},
  };
}

// One logical array stored as separate allocations, one per span.
struct Pieces {
  Pieces(DataType type, const std::vector<std::size_t>& counts) {
    for (std::size_t c : counts) storage.emplace_back(type, c);
    std::vector<detail::Span> spans;
    for (TypedBuffer& b : storage) spans.push_back({b.data(), b.count()});
    buffer = std::make_unique<detail::ScatteredBuffer>(spans, dataTypeSize(type));
  }
  // Element i of the logical array.
  TypedBuffer& at(std::size_t& i) {
    for (TypedBuffer& b : storage) {
      if (i < b.count()) return b;
      i -= b.count();
    }
    FAIL("index beyond the array");
    return storage.front();
  }
  std::vector<TypedBuffer> storage;
  std::unique_ptr<detail::ScatteredBuffer> buffer;
};

// Runs one scattered all-reduce; "" or the first wrong element. Also checks it against the
// contiguous all-reduce of the same input, bit for bit.
std::string runOne(Communicator& comm, const Layout& layout, DataType type, ReduceOp op, bool* reducedInPlace) {
  const int n = comm.size();
  Pieces pieces(type, layout.spans);
  const std::size_t count = pieces.buffer->count();
  TypedBuffer contiguous(type, count);
  for (std::size_t i = 0; i < count; ++i) {
    const double x = closed_form::allreduceInput(op, type, comm.rank(), n, i);
    std::size_t local = i;
    pieces.at(local).set(local, x);
    contiguous.set(i, x);
  }
  Communicator::Impl& core = detail::CoreAccess::of(comm);
  detail::Call call{detail::CollectiveKind::kAllreduce, nullptr, nullptr, pieces.buffer->count(), type, op};
  call.scattered = pieces.buffer.get();
  core.run(call);
  *reducedInPlace = core.lastScatteredInPlace();
  comm.allreduce(contiguous.data(), contiguous.data(), count, type, op);
  for (std::size_t i = 0; i < count; ++i) {
    std::size_t local = i;
    const double got = pieces.at(local).get(local);
    const double want = closed_form::allreduceExpected(op, type, n, i);
    if (got != want || contiguous.get(i) != want)
      return "element " + std::to_string(i) + ": scattered " + std::to_string(got) + ", contiguous " +
             std::to_string(contiguous.get(i)) + ", expected " + std::to_string(want);
  }
  return "";
}

void runAll(const Options& options, bool splitExpected) {
  Communicator comm(MPI_COMM_WORLD, options);
  for (const Layout& layout : layouts())
    for (DataType type : {DataType::kFloat32, DataType::kInt32, DataType::kFloat16, DataType::kFloat64})
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax}) {
        INFO(layout.name << ": " << dataTypeName(type) << " " << reduceOpName(op));
        bool inPlace = false;
        const std::string wrong = runOne(comm, layout, type, op, &inPlace);
        CHECK(wrong == "");
        // One span is reduced where it lies by any algorithm; several only by split.
        const bool split = splitExpected && layout.splitSized && comm.size() > 1;
        CHECK(inPlace == (layout.spans.size() == 1 || split));
        REQUIRE(test::allRanks(wrong.empty()));
      }
}

}  // namespace

TEST_CASE("scattered all-reduce: exact in place through split, packed for the other algorithms", "[core]") {
  runAll(Options::fromEnvironment(), true);
}

TEST_CASE("scattered all-reduce: forced ring packs the spans and unpacks them", "[core]") {
  Options options = Options::fromEnvironment();
  options.algorithm = Algorithm::kRing;
  runAll(options, false);
}

TEST_CASE("scattered buffer: forEach cuts runs at span ends and skips empty spans", "[core]") {
  std::vector<float> a(3), b(4);
  const detail::ScatteredBuffer buffer({{a.data(), 3}, {nullptr, 0}, {b.data(), 4}}, sizeof(float));
  CHECK(buffer.count() == 7);
  std::vector<std::size_t> starts, lengths;
  buffer.forEach(2, 4, [&](std::byte* data, std::size_t index, std::size_t length) {
    starts.push_back(index);
    lengths.push_back(length);
    CHECK(data == reinterpret_cast<std::byte*>(index < 3 ? a.data() + index : b.data() + (index - 3)));
  });
  CHECK(starts == std::vector<std::size_t>{2, 3});
  CHECK(lengths == std::vector<std::size_t>{1, 3});
  const std::vector<detail::PayloadPiece>& pieces = buffer.pieces(0, 1, 5, 2);
  REQUIRE(pieces.size() == 2);
  CHECK(pieces[0].data == a.data());
  CHECK(pieces[1].data == b.data() + 2);
  CHECK(pieces[1].bytes == 2 * sizeof(float));
}
