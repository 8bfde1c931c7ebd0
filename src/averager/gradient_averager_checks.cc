#include "gradient_averager_checks.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "gradient_averager_runner.h"
#include "src/device_path.h"
#include "ringsync/errors.h"

namespace ringsync::detail {
namespace {

constexpr const char* kWho = "GradientAverager";

[[noreturn]] void reject(const std::string& what) { throw InvalidArgument(std::string(kWho) + ": " + what); }

// One gradient as exchanged between ranks: its count and (type, memory) in one word.
std::uint64_t kindWord(const GradientSpec& g) {
  return static_cast<std::uint64_t>(g.type) | (g.onDevice ? std::uint64_t{1} << 8 : 0);
}

std::string describeGradient(std::uint64_t count, std::uint64_t kind, bool withMemory) {
  std::string text = "count=" + std::to_string(count) + " " + dataTypeName(static_cast<DataType>(kind & 0xffu));
  if (withMemory) text += (kind >> 8) ? " in device memory" : " in host memory";
  return text;
}

std::uint64_t hashList(const std::vector<GradientSpec>& gradients) {
  std::uint64_t hash = 1469598103934665603ull;  // FNV-1a, 64 bit
  auto mix = [&](std::uint64_t value) {
    for (int i = 0; i < 8; ++i) {
      hash ^= (value >> (8 * i)) & 0xffu;
      hash *= 1099511628211ull;
    }
  };
  for (const GradientSpec& g : gradients) {
    mix(g.count);
    mix(kindWord(g));
  }
  return hash;
}

void checkNoOverlap(const std::vector<GradientSpec>& gradients) {
  std::vector<std::size_t> order;
  for (std::size_t g = 0; g < gradients.size(); ++g)
    if (gradients[g].count > 0) order.push_back(g);
  auto start = [&](std::size_t g) { return reinterpret_cast<std::uintptr_t>(gradients[g].data); };
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return start(a) < start(b); });
  for (std::size_t k = 1; k < order.size(); ++k) {
    const GradientSpec& previous = gradients[order[k - 1]];
    const std::uintptr_t end = start(order[k - 1]) + previous.count * dataTypeSize(previous.type);
    if (start(order[k]) < end)
      reject("gradients " + std::to_string(std::min(order[k - 1], order[k])) + " and " +
             std::to_string(std::max(order[k - 1], order[k])) +
             " overlap in memory (each gradient must be its own buffer)");
  }
}

// Names each rank whose gradient list differs from rank 0's by its first differing gradient.
std::string describeListDifferences(Communicator& comm, const std::vector<GradientSpec>& gradients) {
  const std::size_t n = gradients.size();
  std::vector<std::uint64_t> mine(2 * n);
  for (std::size_t g = 0; g < n; ++g) {
    mine[2 * g] = gradients[g].count;
    mine[2 * g + 1] = kindWord(gradients[g]);
  }
  std::vector<std::uint64_t> all(mine.size() * static_cast<std::size_t>(comm.size()));
  comm.allgather(mine.data(), all.data(), mine.size(), DataType::kUInt64);
  std::string text;
  for (int r = 1; r < comm.size(); ++r) {
    const std::uint64_t* theirs = all.data() + static_cast<std::size_t>(r) * 2 * n;
    for (std::size_t g = 0; g < n; ++g) {
      if (theirs[2 * g] == all[2 * g] && theirs[2 * g + 1] == all[2 * g + 1]) continue;
      const bool memoryDiffers = (theirs[2 * g + 1] >> 8) != (all[2 * g + 1] >> 8);
      text += (text.empty() ? "" : "; ") + std::string("gradient ") + std::to_string(g) + ": rank " +
              std::to_string(r) + " has " + describeGradient(theirs[2 * g], theirs[2 * g + 1], memoryDiffers) +
              ", rank 0 has " + describeGradient(all[2 * g], all[2 * g + 1], memoryDiffers);
      break;
    }
  }
  return text;
}

std::string describeSettings(const std::uint64_t* s) {
  return "bucketBytes=" + std::to_string(s[2]) + " firstBucketBytes=" + std::to_string(s[3]) +
         " op=" + reduceOpName(static_cast<ReduceOp>(s[4])) + " compressFp16=" + std::to_string(s[5]);
}

}  // namespace

AveragerSettings resolveSettings(const GradientAveragerOptions& options, const Options& commOptions) {
  if (options.op != ReduceOp::kAvg && options.op != ReduceOp::kSum)
    reject(std::string("op=") + (isValid(options.op) ? reduceOpName(options.op) : "invalid") +
           " is not supported; gradients are averaged (avg) or summed (sum)");
  return {options.bucketBytes ? options.bucketBytes : commOptions.bucketBytes,
          options.firstBucketBytes ? options.firstBucketBytes : commOptions.firstBucketBytes, options.op,
          options.compressFp16};
}

std::vector<GradientSpec> checkGradients(const std::vector<GradientBuffer>& gradients) {
  std::vector<GradientSpec> specs;
  specs.reserve(gradients.size());
  for (std::size_t g = 0; g < gradients.size(); ++g) {
    const GradientBuffer& in = gradients[g];
    const std::string name = "gradient " + std::to_string(g);
    if (!isValid(in.type)) reject(name + ": type=" + std::to_string(static_cast<int>(in.type)) + " is not a ringsync::DataType");
    const std::size_t limit = static_cast<std::size_t>(std::numeric_limits<std::ptrdiff_t>::max()) / dataTypeSize(in.type);
    if (in.count > limit) reject(name + ": count=" + std::to_string(in.count) + " exceeds the address space");
    if (in.data == nullptr && in.count > 0) reject(name + ": data is null with count=" + std::to_string(in.count));
    specs.push_back({in.data, in.count, in.type, in.count > 0 && classifyPointer(in.data) == MemoryKind::kDevice});
  }
  checkNoOverlap(specs);
  return specs;
}

void checkSameGradientsOnAllRanks(Communicator& comm, const std::vector<GradientSpec>& gradients,
                                  const AveragerSettings& settings) {
  constexpr std::size_t kWords = 6;
  const std::uint64_t mine[kWords] = {gradients.size(), hashList(gradients), settings.bucketBytes,
                                      settings.firstBucketBytes, static_cast<std::uint64_t>(settings.op),
                                      settings.compressFp16 ? 1u : 0u};
  std::vector<std::uint64_t> all(kWords * static_cast<std::size_t>(comm.size()));
  comm.allgather(mine, all.data(), kWords, DataType::kUInt64);
  std::string counts, settingsText;
  bool listsDiffer = false;
  for (int r = 1; r < comm.size(); ++r) {
    const std::uint64_t* theirs = all.data() + static_cast<std::size_t>(r) * kWords;
    if (theirs[0] != all[0])
      counts += (counts.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r) + " registered " +
                std::to_string(theirs[0]) + " gradients, rank 0 registered " + std::to_string(all[0]);
    if (!std::equal(theirs + 2, theirs + kWords, all.data() + 2))
      settingsText += (settingsText.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r) + " uses " +
                      describeSettings(theirs) + ", rank 0 uses " + describeSettings(all.data());
    listsDiffer = listsDiffer || theirs[1] != all[1];
  }
  const std::string prefix = std::string(kWho) + ": ranks registered different gradients: ";
  if (!counts.empty()) throw MismatchError(prefix + counts);
  if (!settingsText.empty()) throw MismatchError(std::string(kWho) + ": ranks use different settings: " + settingsText);
  // Same length everywhere (checked above), so the full lists can be gathered in one call.
  if (listsDiffer) throw MismatchError(prefix + describeListDifferences(comm, gradients));
}

}  // namespace ringsync::detail
