// selection_table: the host algorithm ringsync's own selection function
// (src/algorithm_selection.cc, detail::chooseAlgorithm) picks for N nodes x L ranks per node and a
// message size, for a grid of them, as CSV (default) or JSON. bench/scale_model reads it, so the
// model compares against the real rules, never a re-typed copy of them. The RINGSYNC_* variables
// apply as they do in the library (RINGSYNC_ALGO=ring shows what a forced ring falls back to).
//
//   selection_table [--nodes 2,4,1024] [--ranks-per-node 1,8] [-b 8] [-e 64M] [-f 2]
//                   [--element-bytes 4] [--collective allreduce|reducescatter|allgather] [--json]
// (for reduce-scatter and all-gather the size is one rank's block, as their count is)
//
// The layout becomes SelectionInputs the way Communicator::Impl builds them (communicator_impl.cc:
// the whole communicator's rounds, the node hierarchy's blocker and node rounds); keep inputsFor()
// in step with that constructor when the inputs change.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench/perf_args.h"
#include "ringsync/options.h"
#include "src/algorithm_selection.h"

namespace {

using ringsync::Options;
using namespace ringsync::detail;

struct Layout {
  int nodes;
  int ranksPerNode;
  int size() const { return nodes * ranksPerNode; }
};

// NodeHierarchy::build's rule (collectives/node_hierarchy.cc) for nodes of equal size: which
// blocker a layout gets, given what a node round may carry.
HierarchyBlocker blockerFor(const Layout& layout, const RoundCapacity& nodeCapacity) {
  if (layout.nodes == 1) return HierarchyBlocker::kOneNode;
  if (layout.ranksPerNode == 1) return HierarchyBlocker::kOneRankPerNode;
  if (nodeCapacity.sharedMemoryBytes < 64 * 1024) return HierarchyBlocker::kSmallNodeRounds;
  return HierarchyBlocker::kNone;
}

// What Communicator::Impl::select passes for this layout (communicator_impl.cc).
SelectionInputs inputsFor(const Layout& layout, CollectiveKind kind, std::size_t bytes, std::size_t elementBytes,
                          const Options& options) {
  const bool oneNode = layout.nodes == 1;
  const RoundCapacity world = roundCapacity(layout.size(), options);
  const RoundCapacity node = roundCapacity(layout.ranksPerNode, options);
  const HierarchyBlocker blocker = blockerFor(layout, node);
  const bool hierarchy = blocker == HierarchyBlocker::kNone;
  SelectionInputs in{kind,         bytes / elementBytes,
                     elementBytes, layout.size(),
                     oneNode,      oneNode ? world.sharedMemoryBytes : world.pointToPointBytes,
                     options};
  in.hierarchy = blocker;
  in.nodeRoundPayloadBytes = hierarchy ? node.sharedMemoryBytes : 0;
  in.doublingMembers = hierarchy ? layout.nodes : oneNode ? 0 : layout.size();
  return in;
}

std::vector<int> parseList(const std::string& text, const char* flag) {
  std::vector<int> values;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    const std::string item = text.substr(begin, end - begin);
    try {
      std::size_t used = 0;
      const int value = std::stoi(item, &used);
      if (used != item.size() || value < 1) throw std::invalid_argument(item);
      values.push_back(value);
    } catch (const std::exception&) {
      throw std::invalid_argument(std::string(flag) + " " + text + ": expected positive integers separated by commas");
    }
    begin = end + 1;
  }
  return values;
}

std::string csvQuoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("ringsync's host all-reduce selection for a grid of layouts and sizes");
  std::string nodesText = "1,2,3,4,6,8,12,16,24,32,48,64,96,128,192,256,384,512,768,1000,1024", ranksText = "1,8";
  std::string minText = "8", maxText = "64M";
  double factor = 2;
  std::size_t elementBytes = 4;
  bool json = false;
  std::string collective = "allreduce";
  app.add_option("--nodes", nodesText, "node counts, comma-separated")->capture_default_str();
  app.add_option("--ranks-per-node", ranksText, "ranks per node, comma-separated")->capture_default_str();
  app.add_option("-b,--minbytes", minText, "smallest message size (e.g. 8, 64K)")->capture_default_str();
  app.add_option("-e,--maxbytes", maxText, "largest message size")->capture_default_str();
  app.add_option("-f,--stepfactor", factor, "multiply the size by this each step (> 1)")->capture_default_str();
  app.add_option("--element-bytes", elementBytes, "bytes per element (4: float32, as allreduce_perf)")
      ->capture_default_str();
  app.add_option("--collective", collective, "allreduce, reducescatter or allgather")
      ->check(CLI::IsMember({"allreduce", "reducescatter", "allgather"}))
      ->capture_default_str();
  app.add_flag("--json", json, "JSON instead of CSV");
  CLI11_PARSE(app, argc, argv);
  try {
    const std::vector<int> nodes = parseList(nodesText, "--nodes"), ranks = parseList(ranksText, "--ranks-per-node");
    const std::size_t minBytes = ringsync::bench::parseSize(minText), maxBytes = ringsync::bench::parseSize(maxText);
    if (factor <= 1 || elementBytes == 0 || minBytes < elementBytes || maxBytes < minBytes)
      throw std::invalid_argument("need -f > 1, --element-bytes > 0 and element-bytes <= -b <= -e");
    const Options options = Options::fromEnvironment();
    const CollectiveKind kind = collective == "reducescatter" ? CollectiveKind::kReduceScatter
                                : collective == "allgather"   ? CollectiveKind::kAllgather
                                                              : CollectiveKind::kAllreduce;
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    if (!json) std::printf("nodes,ranks_per_node,ranks,bytes,algorithm,hierarchy,reason\n");
    for (int n : nodes)
      for (int l : ranks)
        for (double s = static_cast<double>(minBytes); s <= static_cast<double>(maxBytes); s *= factor) {
          const std::size_t bytes = static_cast<std::size_t>(s) / elementBytes * elementBytes;
          const SelectionInputs in = inputsFor({n, l}, kind, bytes, elementBytes, options);
          const Selection chosen = chooseAlgorithm(in);
          const char* algorithm = algorithmName(chosen.algorithm);
          const char* hierarchy = hierarchyBlockerText(in.hierarchy);
          if (json) {
            rows.push_back({{"nodes", n},
                            {"ranks_per_node", l},
                            {"ranks", n * l},
                            {"bytes", bytes},
                            {"algorithm", algorithm},
                            {"hierarchy", hierarchy},
                            {"reason", chosen.reason}});
          } else {
            std::printf("%d,%d,%d,%zu,%s,%s,%s\n", n, l, n * l, bytes, algorithm, csvQuoted(hierarchy).c_str(),
                        csvQuoted(chosen.reason).c_str());
          }
        }
    if (json)
      std::cout << nlohmann::ordered_json{{"settings", options.describe()},
                                          {"collective", collective},
                                          {"element_bytes", elementBytes},
                                          {"rows", rows}}
                       .dump(1)
                << "\n";
  } catch (const std::exception& error) {
    std::fprintf(stderr, "selection_table: %s\n", error.what());
    return 2;
  }
  return 0;
}
