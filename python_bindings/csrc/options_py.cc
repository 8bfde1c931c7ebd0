// ringsync.Options: every tunable (the RINGSYNC_* variables), with snake_case names in Python and
// the enum-valued ones as the strings the environment variables take ("auto", "ring", ...).
#include <nanobind/stl/string.h>

#include <string>

#include "bindings.h"
#include "ringsync/errors.h"
#include "ringsync/options.h"

namespace ringsync::python {
namespace {

template <typename Enum, std::size_t N>
Enum parseChoice(const char* field, const std::string& text, const Enum (&values)[N], const char* (*nameOf)(Enum)) {
  std::string choices;
  for (Enum value : values) {
    if (text == nameOf(value)) return value;
    choices += std::string(choices.empty() ? "" : "|") + nameOf(value);
  }
  throw InvalidArgument("Options." + std::string(field) + "='" + text + "' is not one of " + choices);
}

}  // namespace

void registerOptions(nb::module_& m) {
  nb::class_<Options>(m, "Options",
                      "Every tunable of ringsync with its default; from_environment() reads the RINGSYNC_* "
                      "variables. Every rank must use the same values.")
      .def(nb::init<>(), "The defaults, ignoring the environment.")
      .def_static("from_environment", &Options::fromEnvironment,
                  "The defaults overridden by the RINGSYNC_* variables that are set.")
      .def_rw("ring_segment_bytes", &Options::ringSegmentBytes, "RINGSYNC_RING_SEGMENT_BYTES")
      .def_rw("ring_depth", &Options::ringDepth, "RINGSYNC_RING_DEPTH")
      .def_rw("ring_segment_bytes_across_nodes", &Options::ringSegmentBytesAcrossNodes,
              "RINGSYNC_RING_SEGMENT_BYTES_ACROSS_NODES")
      .def_rw("ring_depth_across_nodes", &Options::ringDepthAcrossNodes, "RINGSYNC_RING_DEPTH_ACROSS_NODES")
      .def_rw("small_bytes", &Options::smallBytes, "RINGSYNC_SMALL_BYTES")
      .def_rw("network_latency_bytes", &Options::networkLatencyBytes, "RINGSYNC_NETWORK_LATENCY_BYTES")
      .def_rw("reduce_to_link_ratio", &Options::reduceToLinkRatio, "RINGSYNC_REDUCE_TO_LINK_RATIO")
      .def_prop_rw(
          "algorithm", [](const Options& o) { return std::string(algorithmName(o.algorithm)); },
          [](Options& o, const std::string& v) {
            o.algorithm = parseChoice("algorithm", v, kAllAlgorithms, algorithmName);
          },
          "RINGSYNC_ALGO: 'auto', 'ring', 'direct', 'split', 'hierarchical', 'recursive_doubling', 'rabenseifner' or "
          "'mpi'")
      .def_prop_rw(
          "backend", [](const Options& o) { return std::string(backendName(o.backend)); },
          [](Options& o, const std::string& v) { o.backend = parseChoice("backend", v, kAllBackends, backendName); },
          "RINGSYNC_BACKEND: 'auto', 'ring', 'nccl' or 'staged'")
      .def_rw("timeout_seconds", &Options::timeoutSeconds, "RINGSYNC_TIMEOUT_SECONDS (0: no deadline)")
      .def_rw("stall_warn_seconds", &Options::stallWarnSeconds, "RINGSYNC_STALL_WARN_SECONDS")
      .def_rw("check_calls", &Options::checkCalls, "RINGSYNC_CHECK")
      .def_rw("check_finite", &Options::checkFinite, "RINGSYNC_CHECK_FINITE")
      .def_rw("spin_wait", &Options::spinWait, "RINGSYNC_SPIN_WAIT")
      .def_prop_rw(
          "log_level", [](const Options& o) { return std::string(logLevelName(o.logLevel)); },
          [](Options& o, const std::string& v) {
            o.logLevel = parseChoice("log_level", v, kAllLogLevels, logLevelName);
          },
          "RINGSYNC_LOG: 'error', 'warn', 'info' or 'debug'")
      .def_rw("cuda_device", &Options::cudaDevice, "RINGSYNC_CUDA_DEVICE (-1: the local rank)")
      .def_rw("bucket_bytes", &Options::bucketBytes, "RINGSYNC_BUCKET_BYTES")
      .def_rw("first_bucket_bytes", &Options::firstBucketBytes, "RINGSYNC_FIRST_BUCKET_BYTES")
      .def_rw("timeline_path", &Options::timelinePath, "RINGSYNC_TIMELINE ('': off)")
      .def("validate", &Options::validate, "Raise InvalidArgument naming the first field out of range.")
      .def("describe", &Options::describe, "'RINGSYNC_RING_SEGMENT_BYTES=524288 RINGSYNC_ALGO=auto ...'")
      .def("__repr__", [](const Options& o) { return "ringsync.Options(" + o.describe() + ")"; });
}

}  // namespace ringsync::python
