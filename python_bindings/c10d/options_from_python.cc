#include "options_from_python.h"

#include <string>

#include "ringsync/errors.h"

namespace py = pybind11;

namespace ringsync::torch_backend {
namespace {

template <typename Enum, std::size_t N>
Enum choice(py::handle options, const char* field, const Enum (&values)[N], const char* (*nameOf)(Enum)) {
  const std::string text = options.attr(field).cast<std::string>();
  for (Enum value : values)
    if (text == nameOf(value)) return value;
  throw InvalidArgument(std::string("Options.") + field + "='" + text + "' is not known to ringsync.torch");
}

}  // namespace

Options optionsFromPython(py::handle o) {
  Options options;
  options.ringSegmentBytes = o.attr("ring_segment_bytes").cast<std::size_t>();
  options.ringDepth = o.attr("ring_depth").cast<int>();
  options.ringSegmentBytesAcrossNodes = o.attr("ring_segment_bytes_across_nodes").cast<std::size_t>();
  options.ringDepthAcrossNodes = o.attr("ring_depth_across_nodes").cast<int>();
  options.smallBytes = o.attr("small_bytes").cast<std::size_t>();
  options.networkLatencyBytes = o.attr("network_latency_bytes").cast<std::size_t>();
  options.reduceToLinkRatio = o.attr("reduce_to_link_ratio").cast<double>();
  options.algorithm = choice(o, "algorithm", kAllAlgorithms, algorithmName);
  options.backend = choice(o, "backend", kAllBackends, backendName);
  options.timeoutSeconds = o.attr("timeout_seconds").cast<double>();
  options.stallWarnSeconds = o.attr("stall_warn_seconds").cast<double>();
  options.checkCalls = o.attr("check_calls").cast<bool>();
  options.checkFinite = o.attr("check_finite").cast<bool>();
  options.spinWait = o.attr("spin_wait").cast<bool>();
  options.logLevel = choice(o, "log_level", kAllLogLevels, logLevelName);
  options.cudaDevice = o.attr("cuda_device").cast<int>();
  options.bucketBytes = o.attr("bucket_bytes").cast<std::size_t>();
  options.firstBucketBytes = o.attr("first_bucket_bytes").cast<std::size_t>();
  options.timelinePath = o.attr("timeline_path").cast<std::string>();
  options.validate();
  return options;
}

}  // namespace ringsync::torch_backend
