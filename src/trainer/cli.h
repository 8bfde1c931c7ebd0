// ringsync-train's command line (CLI11) -> TrainerConfig. Every rank parses the same argv; only
// the rank that passes `print` writes help and errors.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "config.h"

namespace ringsync::trainer {

// Fills `config`. Returns an exit code when the program should stop now (--help: 0, a bad
// option: CLI11's non-zero code), nothing when it should train.
std::optional<int> parseCommandLine(int argc, const char* const* argv, TrainerConfig& config, bool print,
                                    std::ostream& out, std::ostream& err);

// "784,256,128,10" or "784-256-128-10" -> {784, 256, 128, 10}; InvalidArgument otherwise.
std::vector<std::size_t> parseLayers(const std::string& text);

}  // namespace ringsync::trainer
