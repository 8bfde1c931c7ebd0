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

// FNV-1a, 64 bit, over whole words.
struct Fnv1a {
  std::uint64_t hash = 1469598103934665603ull;
  void mix(std::uint64_t value) {
    for (int i = 0; i < 8; ++i) {
      hash ^= (value >> (8 * i)) & 0xffu;
      hash *= 1099511628211ull;
    }
  }
};

std::uint64_t hashList(const std::vector<GradientSpec>& gradients) {
  Fnv1a fnv;
  for (const GradientSpec& g : gradients) {
    fnv.mix(g.count);
    fnv.mix(kindWord(g));
  }
  return fnv.hash;
}

std::string describeKind(const GradientSpec& g) {
  return std::string(dataTypeName(g.type)) + (g.onDevice ? " in device memory" : " in host memory");
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

void checkGroups(const std::vector<std::vector<std::size_t>>& groups, const std::vector<GradientSpec>& gradients,
                 const char* who) {
  if (groups.empty()) return;
  constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::vector<std::size_t> groupOf(gradients.size(), kNone);
  for (std::size_t k = 0; k < groups.size(); ++k) {
    const std::string group = "groups[" + std::to_string(k) + "]";
    if (groups[k].empty()) reject(who, group + " is empty (every bucket holds at least one gradient)");
    const GradientSpec* kind = nullptr;  // the group's first non-empty member
    std::size_t kindIndex = 0;
    for (std::size_t g : groups[k]) {
      if (g >= gradients.size())
        reject(who, group + " names gradient " + std::to_string(g) + ", but " + std::to_string(gradients.size()) +
                        " gradients are registered");
      if (groupOf[g] != kNone)
        reject(who, "gradient " + std::to_string(g) + " is in groups[" + std::to_string(groupOf[g]) + "] and " + group +
                        " (each gradient belongs to exactly one)");
      groupOf[g] = k;
      const GradientSpec& spec = gradients[g];
      if (kind == nullptr && spec.count > 0) {
        kind = &spec;
        kindIndex = g;
      }
      // Empty gradients carry nothing: any type, any memory (in whatever order they come).
      const bool typeDiffers = kind != nullptr && spec.count > 0 && spec.type != kind->type;
      const bool memoryDiffers = kind != nullptr && spec.count > 0 && spec.onDevice != kind->onDevice;
      if (typeDiffers || memoryDiffers)
        reject(who, group + " mixes gradient " + std::to_string(kindIndex) + " (" + describeKind(*kind) +
                        ") and gradient " + std::to_string(g) + " (" + describeKind(spec) +
                        "): a bucket holds one element type in one kind of memory");
    }
  }
  const auto missing = std::find(groupOf.begin(), groupOf.end(), kNone);
  if (missing != groupOf.end())
    reject(who, "gradient " + std::to_string(missing - groupOf.begin()) +
                    " is in no group (with groups given, each gradient belongs to exactly one)");
}

std::uint64_t hashBuckets(const std::vector<Bucket>& buckets) {
  Fnv1a fnv;
  for (const Bucket& bucket : buckets) {
    fnv.mix(bucket.members.size());
    for (const BucketMember& member : bucket.members) fnv.mix(member.gradient);
  }
  return fnv.hash;
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
                                  const AveragerSettings& settings, std::uint64_t bucketsHash,
                                  std::uint64_t partitionHash) {
  constexpr std::size_t kWords = 9;
  constexpr std::size_t kPartition = 7;  // words 2..6: the settings
  constexpr std::size_t kBuckets = 8;
  const std::uint64_t mine[kWords] = {gradients.size(),
                                      hashList(gradients),
                                      settings.bucketBytes,
                                      settings.firstBucketBytes,
                                      static_cast<std::uint64_t>(settings.op),
                                      settings.compressFp16 ? 1u : 0u,
                                      settings.sharded ? 1u : 0u,
                                      partitionHash,
                                      bucketsHash};
  std::vector<std::uint64_t> all(kWords * static_cast<std::size_t>(comm.size()));
  comm.allgather(mine, all.data(), kWords, DataType::kUInt64);
  const char* noun = settings.sharded ? "tensors" : "gradients";
  std::string counts, settingsText, partitions, bucketRanks;
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
    if (theirs[kBuckets] != all[kBuckets]) bucketRanks += (bucketRanks.empty() ? "" : ", ") + rank;
    listsDiffer = listsDiffer || theirs[1] != all[1];
  }
  const std::string who = settings.who();
  const std::string prefix = who + ": ranks registered different " + noun + ": ";
  if (!counts.empty()) throw MismatchError(prefix + counts);
  if (!settingsText.empty()) throw MismatchError(who + ": ranks use different settings: " + settingsText);
  // Same length everywhere (checked above), so the full lists can be gathered in one call.
  if (listsDiffer)
    throw MismatchError(prefix + describeListDifferences(comm, gradients, settings.sharded ? "tensor" : "gradient"));
  // Planned buckets follow from the lists and settings; given ones (options.groups) may differ.
  if (!bucketRanks.empty())
    throw MismatchError(who + ": " + bucketRanks +
                        " fused the gradients into other buckets than rank 0 (GradientAveragerOptions::groups differ)");
  // Same lists and settings give the same partition; a difference here is a bug, named all the same.
  if (!partitions.empty()) throw MismatchError(who + ": the partition of " + partitions + " differs from rank 0's");
}

}  // namespace ringsync::detail
