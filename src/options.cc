#include "ringsync/options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string>

#include "ringsync/errors.h"
#include "selection_constants.h"

namespace ringsync {
namespace {

const char* readVariable(const char* name) {
  const char* value = std::getenv(name);
  return (value && *value) ? value : nullptr;
}

[[noreturn]] void badVariable(const char* name, const std::string& value, const char* expected) {
  throw InvalidArgument(std::string(name) + "=\"" + value + "\" is not valid: expected " + expected);
}

// Accepts "262144", "256K", "256KiB", "4M", "1G" (powers of 1024).
std::size_t parseBytes(const char* name, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const unsigned long long number = std::strtoull(text.c_str(), &end, 10);
  if (end == text.c_str() || errno != 0 || text[0] == '-')
    badVariable(name, text, "a byte count such as 262144 or 256K");
  std::string suffix(end);
  std::size_t scale = 1;
  if (suffix == "K" || suffix == "KiB" || suffix == "k") scale = std::size_t{1} << 10;
  else if (suffix == "M" || suffix == "MiB") scale = std::size_t{1} << 20;
  else if (suffix == "G" || suffix == "GiB") scale = std::size_t{1} << 30;
  else if (!suffix.empty() && suffix != "B") badVariable(name, text, "a byte count such as 262144 or 256K");
  return static_cast<std::size_t>(number) * scale;
}

// A finite number >= 0; `expected` says what kind in the error ("a non-negative number of seconds").
double parseNonNegative(const char* name, const std::string& text, const char* expected) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !std::isfinite(value) || value < 0) badVariable(name, text, expected);
  return value;
}
double parseSeconds(const char* name, const std::string& text) {
  return parseNonNegative(name, text, "a non-negative number of seconds");
}
double parseRatio(const char* name, const std::string& text) {
  return parseNonNegative(name, text, "a non-negative number such as 0.006 or 1.25");
}

int parseInt(const char* name, const std::string& text) {
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0') badVariable(name, text, "an integer");
  return static_cast<int>(value);
}

bool parseBool(const char* name, const std::string& text) {
  if (text == "1" || text == "on" || text == "true" || text == "yes") return true;
  if (text == "0" || text == "off" || text == "false" || text == "no") return false;
  badVariable(name, text, "0 or 1");
}

template <typename Enum, std::size_t N> Enum parseChoice(const char* name, const std::string& text,
                                                         const Enum (&values)[N], const char* (*nameOf)(Enum),
                                                         const char* expected) {
  for (Enum value : values)
    if (text == nameOf(value)) return value;
  badVariable(name, text, expected);
}

}  // namespace

const char* algorithmName(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::kAuto: return "auto";
    case Algorithm::kRing: return "ring";
    case Algorithm::kDirect: return "direct";
    case Algorithm::kSplit: return "split";
    case Algorithm::kHierarchical: return "hierarchical";
    case Algorithm::kRecursiveDoubling: return "recursive_doubling";
    case Algorithm::kMpi: return "mpi";
    case Algorithm::kRabenseifner: return "rabenseifner";
  }
  return "invalid";
}

const char* backendName(BackendChoice backend) {
  switch (backend) {
    case BackendChoice::kAuto: return "auto";
    case BackendChoice::kRing: return "ring";
    case BackendChoice::kNccl: return "nccl";
    case BackendChoice::kStaged: return "staged";
  }
  return "invalid";
}

const char* logLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kError: return "error";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kInfo: return "info";
    case LogLevel::kDebug: return "debug";
  }
  return "invalid";
}

Options Options::fromEnvironment() {
  Options options;
  if (const char* v = readVariable("RINGSYNC_RING_SEGMENT_BYTES"))
    options.ringSegmentBytes = parseBytes("RINGSYNC_RING_SEGMENT_BYTES", v);
  if (const char* v = readVariable("RINGSYNC_RING_DEPTH")) options.ringDepth = parseInt("RINGSYNC_RING_DEPTH", v);
  if (const char* v = readVariable("RINGSYNC_RING_SEGMENT_BYTES_ACROSS_NODES"))
    options.ringSegmentBytesAcrossNodes = parseBytes("RINGSYNC_RING_SEGMENT_BYTES_ACROSS_NODES", v);
  if (const char* v = readVariable("RINGSYNC_RING_DEPTH_ACROSS_NODES"))
    options.ringDepthAcrossNodes = parseInt("RINGSYNC_RING_DEPTH_ACROSS_NODES", v);
  if (const char* v = readVariable("RINGSYNC_SMALL_BYTES")) options.smallBytes = parseBytes("RINGSYNC_SMALL_BYTES", v);
  if (const char* v = readVariable("RINGSYNC_NETWORK_LATENCY_BYTES"))
    options.networkLatencyBytes = parseBytes("RINGSYNC_NETWORK_LATENCY_BYTES", v);
  if (const char* v = readVariable("RINGSYNC_REDUCE_TO_LINK_RATIO"))
    options.reduceToLinkRatio = parseRatio("RINGSYNC_REDUCE_TO_LINK_RATIO", v);
  if (const char* v = readVariable("RINGSYNC_ALGO"))
    options.algorithm = parseChoice("RINGSYNC_ALGO", v, kAllAlgorithms, algorithmName,
                                    "auto, ring, direct, split, hierarchical, recursive_doubling, rabenseifner or mpi");
  if (const char* v = readVariable("RINGSYNC_BACKEND"))
    options.backend = parseChoice("RINGSYNC_BACKEND", v, kAllBackends, backendName, "auto, ring, nccl or staged");
  if (const char* v = readVariable("RINGSYNC_TIMEOUT_SECONDS"))
    options.timeoutSeconds = parseSeconds("RINGSYNC_TIMEOUT_SECONDS", v);
  if (const char* v = readVariable("RINGSYNC_STALL_WARN_SECONDS"))
    options.stallWarnSeconds = parseSeconds("RINGSYNC_STALL_WARN_SECONDS", v);
  if (const char* v = readVariable("RINGSYNC_CHECK")) options.checkCalls = parseBool("RINGSYNC_CHECK", v);
  if (const char* v = readVariable("RINGSYNC_CHECK_FINITE"))
    options.checkFinite = parseBool("RINGSYNC_CHECK_FINITE", v);
  if (const char* v = readVariable("RINGSYNC_SPIN_WAIT")) options.spinWait = parseBool("RINGSYNC_SPIN_WAIT", v);
  if (const char* v = readVariable("RINGSYNC_LOG"))
    options.logLevel = parseChoice("RINGSYNC_LOG", v, kAllLogLevels, logLevelName, "error, warn, info or debug");
  if (const char* v = readVariable("RINGSYNC_CUDA_DEVICE")) options.cudaDevice = parseInt("RINGSYNC_CUDA_DEVICE", v);
  if (const char* v = readVariable("RINGSYNC_BUCKET_BYTES"))
    options.bucketBytes = parseBytes("RINGSYNC_BUCKET_BYTES", v);
  if (const char* v = readVariable("RINGSYNC_FIRST_BUCKET_BYTES"))
    options.firstBucketBytes = parseBytes("RINGSYNC_FIRST_BUCKET_BYTES", v);
  if (const char* v = readVariable("RINGSYNC_TIMELINE")) options.timelinePath = v;
  options.validate();
  return options;
}

void Options::validate() const {
  auto fail = [](const char* field, const std::string& why) {
    throw InvalidArgument(std::string("Options::") + field + " " + why);
  };
  if (ringSegmentBytes < 64 || ringSegmentBytes > (std::size_t{1} << 30))
    fail("ringSegmentBytes (RINGSYNC_RING_SEGMENT_BYTES)",
         "must be between 64 and 1 GiB, got " + std::to_string(ringSegmentBytes));
  if (ringDepth < 2 || ringDepth > 64)
    fail("ringDepth (RINGSYNC_RING_DEPTH)", "must be between 2 and 64, got " + std::to_string(ringDepth));
  if (ringSegmentBytesAcrossNodes < 64 || ringSegmentBytesAcrossNodes > (std::size_t{1} << 30))
    fail("ringSegmentBytesAcrossNodes (RINGSYNC_RING_SEGMENT_BYTES_ACROSS_NODES)",
         "must be between 64 and 1 GiB, got " + std::to_string(ringSegmentBytesAcrossNodes));
  if (ringDepthAcrossNodes < 2 || ringDepthAcrossNodes > 64)
    fail("ringDepthAcrossNodes (RINGSYNC_RING_DEPTH_ACROSS_NODES)",
         "must be between 2 and 64, got " + std::to_string(ringDepthAcrossNodes));
  if (smallBytes > detail::kMaxSmallBytes)
    fail("smallBytes (RINGSYNC_SMALL_BYTES)",
         "must be at most " + std::to_string(detail::kMaxSmallBytes) + ", got " + std::to_string(smallBytes));
  if (networkLatencyBytes < 1 || networkLatencyBytes > (std::size_t{1} << 30))
    fail("networkLatencyBytes (RINGSYNC_NETWORK_LATENCY_BYTES)",
         "must be between 1 and 1 GiB, got " + std::to_string(networkLatencyBytes));
  if (!(reduceToLinkRatio >= 0 && reduceToLinkRatio <= 1000))
    fail("reduceToLinkRatio (RINGSYNC_REDUCE_TO_LINK_RATIO)",
         "must be between 0 and 1000, got " + std::to_string(reduceToLinkRatio));
  if (!(timeoutSeconds >= 0) || !(stallWarnSeconds >= 0))
    fail("timeoutSeconds/stallWarnSeconds", "must be non-negative");
  if (bucketBytes == 0 || firstBucketBytes == 0)
    fail("bucketBytes/firstBucketBytes (RINGSYNC_BUCKET_BYTES)", "must be positive");
}

std::string Options::describe() const {
  std::ostringstream out;
  out << "RINGSYNC_RING_SEGMENT_BYTES=" << ringSegmentBytes << " RINGSYNC_RING_DEPTH=" << ringDepth
      << " RINGSYNC_RING_SEGMENT_BYTES_ACROSS_NODES=" << ringSegmentBytesAcrossNodes
      << " RINGSYNC_RING_DEPTH_ACROSS_NODES=" << ringDepthAcrossNodes << " RINGSYNC_SMALL_BYTES=" << smallBytes
      << " RINGSYNC_NETWORK_LATENCY_BYTES=" << networkLatencyBytes
      << " RINGSYNC_REDUCE_TO_LINK_RATIO=" << reduceToLinkRatio << " RINGSYNC_ALGO=" << algorithmName(algorithm)
      << " RINGSYNC_BACKEND=" << backendName(backend) << " RINGSYNC_TIMEOUT_SECONDS=" << timeoutSeconds
      << " RINGSYNC_STALL_WARN_SECONDS=" << stallWarnSeconds << " RINGSYNC_CHECK=" << (checkCalls ? 1 : 0)
      << " RINGSYNC_CHECK_FINITE=" << (checkFinite ? 1 : 0) << " RINGSYNC_SPIN_WAIT=" << (spinWait ? 1 : 0)
      << " RINGSYNC_LOG=" << logLevelName(logLevel) << " RINGSYNC_CUDA_DEVICE=" << cudaDevice
      << " RINGSYNC_BUCKET_BYTES=" << bucketBytes << " RINGSYNC_FIRST_BUCKET_BYTES=" << firstBucketBytes;
  if (!timelinePath.empty()) out << " RINGSYNC_TIMELINE=" << timelinePath;
  return out.str();
}

}  // namespace ringsync
