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

[[noreturn]] void reject(const char* who, const std::string& what) {
  throw InvalidArgument(std::string(who) + ": " + what);
}

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

// One buffer the caller registered, as errors name it: "gradient 3", "parameter 3".
struct NamedBuffer {
  const GradientSpec* spec;
  const char* noun;
  std::size_t index;
};

// "gradients 0 and 1", "gradient 2 and parameter 0".
std::string describePair(NamedBuffer a, NamedBuffer b) {
  if (std::string(b.noun) < a.noun || (a.noun == std::string(b.noun) && b.index < a.index)) std::swap(a, b);
  if (a.noun == std::string(b.noun))
    return a.noun + std::string("s ") + std::to_string(a.index) + " and " + std::to_string(b.index);
  return a.noun + std::string(" ") + std::to_string(a.index) + " and " + b.noun + " " + std::to_string(b.index);
}

void checkNoOverlap(const char* who, std::vector<NamedBuffer> buffers) {
  buffers.erase(std::remove_if(buffers.begin(), buffers.end(), [](const NamedBuffer& b) { return b.spec->count == 0; }),
                buffers.end());
  auto start = [](const NamedBuffer& b) { return reinterpret_cast<std::uintptr_t>(b.spec->data); };
  std::sort(buffers.begin(), buffers.end(),
            [&](const NamedBuffer& a, const NamedBuffer& b) { return start(a) < start(b); });
  for (std::size_t k = 1; k < buffers.size(); ++k) {
    const GradientSpec& previous = *buffers[k - 1].spec;
    const std::uintptr_t end = start(buffers[k - 1]) + previous.count * dataTypeSize(previous.type);
    if (start(buffers[k]) < end)
      reject(who, describePair(buffers[k - 1], buffers[k]) + " overlap in memory (each must be its own buffer)");
  }
}

std::vector<NamedBuffer> named(const std::vector<GradientSpec>& specs, const char* noun) {
  std::vector<NamedBuffer> out;
  for (std::size_t i = 0; i < specs.size(); ++i) out.push_back({&specs[i], noun, i});
  return out;
}

GradientSpec checkBuffer(const char* who, const GradientBuffer& in, const std::string& name) {
  if (!isValid(in.type))
    reject(who, name + ": type=" + std::to_string(static_cast<int>(in.type)) + " is not a ringsync::DataType");
  const std::size_t limit = static_cast<std::size_t>(std::numeric_limits<std::ptrdiff_t>::max()) /
                            dataTypeSize(in.type);
  if (in.count > limit) reject(who, name + ": count=" + std::to_string(in.count) + " exceeds the address space");
  if (in.data == nullptr && in.count > 0) reject(who, name + ": data is null with count=" + std::to_string(in.count));
  return {in.data, in.count, in.type, in.count > 0 && classifyPointer(in.data) == MemoryKind::kDevice};
}

// Names each rank whose gradient list differs from rank 0's by its first differing gradient.
std::string describeListDifferences(Communicator& comm, const std::vector<GradientSpec>& gradients, const char* noun) {
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
      text += (text.empty() ? "" : "; ") + std::string(noun) + " " + std::to_string(g) + ": rank " + std::to_string(r) +
              " has " + describeGradient(theirs[2 * g], theirs[2 * g + 1], memoryDiffers) + ", rank 0 has " +
              describeGradient(all[2 * g], all[2 * g + 1], memoryDiffers);
      break;
    }
  }
  return text;
}

std::string describeSettings(const std::uint64_t* s) {
  return "bucketBytes=" + std::to_string(s[2]) + " firstBucketBytes=" + std::to_string(s[3]) +
         " op=" + reduceOpName(static_cast<ReduceOp>(s[4])) + " compressFp16=" + std::to_string(s[5]) +
         (s[6] ? " sharded" : " replicated");
}

}  // namespace

AveragerSettings resolveSettings(const GradientAveragerOptions& options, const Options& commOptions, bool sharded) {
  AveragerSettings settings{options.bucketBytes ? options.bucketBytes : commOptions.bucketBytes,
                            options.firstBucketBytes ? options.firstBucketBytes : commOptions.firstBucketBytes,
                            options.op, options.compressFp16, sharded};
  if (options.op != ReduceOp::kAvg && options.op != ReduceOp::kSum)
    reject(settings.who(), std::string("op=") + (isValid(options.op) ? reduceOpName(options.op) : "invalid") +
                               " is not supported; gradients are averaged (avg) or summed (sum)");
  return settings;
}

std::vector<GradientSpec> checkGradients(const std::vector<GradientBuffer>& gradients, const char* who) {
  std::vector<GradientSpec> specs;
  specs.reserve(gradients.size());
  for (std::size_t g = 0; g < gradients.size(); ++g)
    specs.push_back(checkBuffer(who, gradients[g], "gradient " + std::to_string(g)));
  checkNoOverlap(who, named(specs, "gradient"));
  return specs;
}

std::vector<GradientSpec> checkParameters(const std::vector<GradientBuffer>& parameters,
                                          const std::vector<GradientSpec>& gradients, const char* who) {
  if (parameters.size() != gradients.size())
    reject(who, std::to_string(parameters.size()) + " parameters for " + std::to_string(gradients.size()) +
                    " gradients (one parameter per gradient, in the same order)");
  std::vector<GradientSpec> specs;
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    const std::string name = "parameter " + std::to_string(i);
    specs.push_back(checkBuffer(who, parameters[i], name));
    const GradientSpec& p = specs.back();
    const GradientSpec& g = gradients[i];
    if (p.count != g.count || p.type != g.type)
      reject(who, name + " (count=" + std::to_string(p.count) + " " + dataTypeName(p.type) +
                      ") does not match gradient " + std::to_string(i) + " (count=" + std::to_string(g.count) + " " +
                      dataTypeName(g.type) + ")");
    if (p.count > 0 && g.count > 0 && p.onDevice != g.onDevice)
      reject(who, name + " is in " + (p.onDevice ? "device" : "host") + " memory, gradient " + std::to_string(i) +
                      " in " + (g.onDevice ? "device" : "host") + " memory (a tensor's two buffers share one kind)");
  }
  std::vector<NamedBuffer> all = named(gradients, "gradient");
  for (const NamedBuffer& p : named(specs, "parameter")) all.push_back(p);
  checkNoOverlap(who, std::move(all));
  return specs;
}

void checkSameGradientsOnAllRanks(Communicator& comm, const std::vector<GradientSpec>& gradients,
                                  const AveragerSettings& settings, std::uint64_t partitionHash) {
  constexpr std::size_t kWords = 8;
  constexpr std::size_t kPartition = 7;  // words 2..6: the settings
  const std::uint64_t mine[kWords] = {gradients.size(),
                                      hashList(gradients),
                                      settings.bucketBytes,
                                      settings.firstBucketBytes,
                                      static_cast<std::uint64_t>(settings.op),
                                      settings.compressFp16 ? 1u : 0u,
                                      settings.sharded ? 1u : 0u,
                                      partitionHash};
  std::vector<std::uint64_t> all(kWords * static_cast<std::size_t>(comm.size()));
  comm.allgather(mine, all.data(), kWords, DataType::kUInt64);
  const char* noun = settings.sharded ? "tensors" : "gradients";
  std::string counts, settingsText, partitions;
  bool listsDiffer = false;
  for (int r = 1; r < comm.size(); ++r) {
    const std::uint64_t* theirs = all.data() + static_cast<std::size_t>(r) * kWords;
    const std::string rank = "rank " + std::to_string(r);
    if (theirs[0] != all[0])
      counts += (counts.empty() ? "" : "; ") + rank + " registered " + std::to_string(theirs[0]) + " " + noun +
                ", rank 0 registered " + std::to_string(all[0]);
    if (!std::equal(theirs + 2, theirs + kPartition, all.data() + 2))
      settingsText += (settingsText.empty() ? "" : "; ") + rank + " uses " + describeSettings(theirs) +
                      ", rank 0 uses " + describeSettings(all.data());
    if (theirs[kPartition] != all[kPartition]) partitions += (partitions.empty() ? "" : ", ") + rank;
    listsDiffer = listsDiffer || theirs[1] != all[1];
  }
  const std::string who = settings.who();
  const std::string prefix = who + ": ranks registered different " + noun + ": ";
  if (!counts.empty()) throw MismatchError(prefix + counts);
  if (!settingsText.empty()) throw MismatchError(who + ": ranks use different settings: " + settingsText);
  // Same length everywhere (checked above), so the full lists can be gathered in one call.
  if (listsDiffer)
    throw MismatchError(prefix + describeListDifferences(comm, gradients, settings.sharded ? "tensor" : "gradient"));
  // Same lists and settings give the same partition; a difference here is a bug, named all the same.
  if (!partitions.empty()) throw MismatchError(who + ": the partition of " + partitions + " differs from rank 0's");
}

}  // namespace ringsync::detail
