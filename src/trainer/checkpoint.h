// Checkpoints: the model, the optimizer's momentum and the position in the run, so a resumed run
// continues bit-identically (the shuffled order and the learning rate depend only on the seed and
// the position). Binary, little-endian:
//   "RSYNCCK1" | u64 version, widthCount, widths..., seed, globalBatch, epoch, batch, step, count
//   | f32 parameters[count] | f32 momentum[count] | u32 CRC-32 (zlib) of everything before it
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ringsync/communicator.h"

namespace ringsync::trainer {

struct TrainingPosition {
  std::uint64_t epoch = 0;  // epoch to run next
  std::uint64_t batch = 0;  // batch of that epoch to run next
  std::uint64_t step = 0;   // steps done so far (the learning-rate schedule's clock)
};

struct Checkpoint {
  std::vector<std::size_t> widths;  // the model's layer widths
  std::uint64_t seed = 0;
  std::uint64_t globalBatch = 0;
  TrainingPosition position;
  std::vector<float> parameters;
  std::vector<float> momentum;
};

std::vector<std::uint8_t> serializeCheckpoint(const Checkpoint& checkpoint);
// Raises InvalidArgument naming `name` and the problem (bad magic or version, truncated, CRC
// mismatch, inconsistent sizes).
Checkpoint parseCheckpoint(const std::vector<std::uint8_t>& bytes, const std::string& name);

// Writes `path`.tmp, flushes it to disk and renames it over `path`: a crash leaves either the old
// or the new checkpoint, never half of one. InvalidArgument naming the file when writing fails.
void writeCheckpointFile(const std::string& path, const Checkpoint& checkpoint);
Checkpoint readCheckpointFile(const std::string& path);

// Collective versions: rank 0 writes (or reads and broadcasts); a failure is raised on every rank.
void saveCheckpoint(Communicator& comm, const std::string& path, const Checkpoint& checkpoint);
Checkpoint loadCheckpoint(Communicator& comm, const std::string& path);

}  // namespace ringsync::trainer
