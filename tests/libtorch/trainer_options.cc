#include "trainer_options.h"

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <stdexcept>

namespace ringsync_example {
namespace {

constexpr const char* kUsage =
    "usage: libtorch_ddp_trainer [--check | --compare] [options]\n"
    "  --check                 train with --sync and compare with one process on the whole batch (default)\n"
    "  --compare               time --modes against each other, interleaved in rounds\n"
    "  --data DIR              Fashion-MNIST's gzip IDX files (default /usr/share/datasets/fashion-mnist)\n"
    "  --model mlp|cnn         (default mlp)   --hidden W1,W2,...  the MLP's hidden widths (default 128,64)\n"
    "  --dtype float32|float64 (default float32)\n"
    "  --batch N               global batch, split evenly over the ranks (default 96)\n"
    "  --steps N               --check: SGD steps (default 12)\n"
    "  --sync ddp|communicator|mpi   --check: how gradients are averaged (default ddp)\n"
    "  --modes A,B,...         --compare: modes to time (default ddp,communicator,mpi)\n"
    "  --rounds N --steps-per-round N   --compare: (default 5 x 10, after one untimed round)\n"
    "  --overlap auto|on|off   ddp: start buckets during backward (default auto: DDP decides)\n"
    "  --lr X --momentum X     SGD (default 0.05, 0.9)   --seed N   --threads N (torch threads per rank, 1)\n";

std::vector<std::string> splitList(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) items.push_back(item);
  return items;
}

long long integer(const std::string& option, const std::string& value, long long minimum) {
  char* end = nullptr;
  const long long parsed = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || parsed < minimum)
    throw std::invalid_argument(option + " " + value + ": expected an integer >= " + std::to_string(minimum));
  return parsed;
}

Sync syncOption(const std::string& option, const std::string& value) {
  if (const auto parsed = parseSync(value); parsed && *parsed != Sync::kNone) return *parsed;
  throw std::invalid_argument(option + " " + value + ": use ddp, communicator or mpi");
}

}  // namespace

TrainerOptions parseTrainerOptions(int argc, char** argv) {
  TrainerOptions o;
  for (int i = 1; i < argc; ++i) {
    const std::string option = argv[i];
    if (option == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (option == "--check" || option == "--compare") {
      o.compareMode = option == "--compare";
      continue;
    }
    if (i + 1 >= argc) throw std::invalid_argument(option + ": unknown option or missing value\n" + kUsage);
    const std::string value = argv[++i];
    if (option == "--data") {
      o.dataDir = value;
    } else if (option == "--model") {
      o.model.kind = value;
    } else if (option == "--hidden") {
      o.model.hidden.clear();
      for (const std::string& w : splitList(value)) o.model.hidden.push_back(integer(option, w, 1));
    } else if (option == "--dtype") {
      if (value != "float32" && value != "float64")
        throw std::invalid_argument("--dtype " + value + ": use float32 or float64");
      o.model.dtype = value == "float64" ? ::torch::kDouble : ::torch::kFloat;
    } else if (option == "--batch") {
      o.batch = integer(option, value, 1);
    } else if (option == "--steps") {
      o.steps = integer(option, value, 1);
    } else if (option == "--sync") {
      o.sync = syncOption(option, value);
    } else if (option == "--modes") {
      o.compare.clear();
      for (const std::string& m : splitList(value)) o.compare.push_back(syncOption(option, m));
    } else if (option == "--rounds") {
      o.rounds = static_cast<int>(integer(option, value, 1));
    } else if (option == "--steps-per-round") {
      o.stepsPerRound = integer(option, value, 1);
    } else if (option == "--overlap") {
      if (value != "auto" && value != "on" && value != "off")
        throw std::invalid_argument("--overlap " + value + ": use auto, on or off");
      o.model.ddpOverlap = value == "auto" ? std::nullopt : std::optional<bool>(value == "on");
    } else if (option == "--lr") {
      o.model.learningRate = std::stod(value);
    } else if (option == "--momentum") {
      o.model.momentum = std::stod(value);
    } else if (option == "--seed") {
      o.seed = static_cast<std::uint64_t>(integer(option, value, 0));
    } else if (option == "--threads") {
      o.threads = static_cast<int>(integer(option, value, 1));
    } else {
      throw std::invalid_argument(option + ": unknown option\n" + kUsage);
    }
  }
  if (o.model.kind != "mlp" && o.model.kind != "cnn")
    throw std::invalid_argument("--model " + o.model.kind + ": use mlp or cnn");
  return o;
}

}  // namespace ringsync_example
