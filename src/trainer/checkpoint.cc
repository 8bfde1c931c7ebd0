#include "checkpoint.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include <unistd.h>
#include <zlib.h>

#include "ringsync/errors.h"
#include "root_task.h"

namespace ringsync::trainer {

namespace {

constexpr char kMagic[8] = {'R', 'S', 'Y', 'N', 'C', 'C', 'K', '1'};
constexpr std::uint64_t kVersion = 1;
constexpr std::uint64_t kMaxWidths = 1024;

template <typename T> void append(std::vector<std::uint8_t>& out, const T* values, std::size_t count) {
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(values);
  out.insert(out.end(), bytes, bytes + count * sizeof(T));
}

std::uint32_t crcOf(const std::uint8_t* data, std::size_t bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  for (std::size_t done = 0; done < bytes;) {  // crc32 takes a uInt length
    const uInt chunk = static_cast<uInt>(std::min<std::size_t>(bytes - done, 1u << 30));
    crc = crc32(crc, data + done, chunk);
    done += chunk;
  }
  return static_cast<std::uint32_t>(crc);
}

// Sequential reads with bounds checks; every failure names the file.
class Reader {
 public:
  Reader(const std::vector<std::uint8_t>& bytes, std::size_t end, const std::string& name)
      : bytes_(bytes), end_(end), name_(name) {}
  template <typename T> void read(T* out, std::size_t count, const char* what) {
    if (count > (end_ - offset_) / sizeof(T)) {
      throw InvalidArgument(name_ + ": checkpoint truncated while reading " + what);
    }
    std::memcpy(out, bytes_.data() + offset_, count * sizeof(T));
    offset_ += count * sizeof(T);
  }
  std::uint64_t u64(const char* what) {
    std::uint64_t value = 0;
    read(&value, 1, what);
    return value;
  }
  std::size_t remaining() const { return end_ - offset_; }

 private:
  const std::vector<std::uint8_t>& bytes_;
  std::size_t end_;
  std::size_t offset_ = sizeof(kMagic);
  const std::string& name_;
};

}  // namespace

std::vector<std::uint8_t> serializeCheckpoint(const Checkpoint& c) {
  std::vector<std::uint8_t> out(kMagic, kMagic + sizeof(kMagic));
  std::vector<std::uint64_t> header = {kVersion, c.widths.size()};
  header.insert(header.end(), c.widths.begin(), c.widths.end());
  header.insert(header.end(), {c.seed, c.globalBatch, c.position.epoch, c.position.batch, c.position.step,
                               static_cast<std::uint64_t>(c.parameters.size())});
  append(out, header.data(), header.size());
  append(out, c.parameters.data(), c.parameters.size());
  append(out, c.momentum.data(), c.momentum.size());
  const std::uint32_t crc = crcOf(out.data(), out.size());
  append(out, &crc, 1);
  return out;
}

Checkpoint parseCheckpoint(const std::vector<std::uint8_t>& bytes, const std::string& name) {
  if (bytes.size() < sizeof(kMagic) + sizeof(std::uint32_t) || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    throw InvalidArgument(name + ": not a ringsync-train checkpoint (bad magic)");
  }
  const std::size_t end = bytes.size() - sizeof(std::uint32_t);
  std::uint32_t stored = 0;
  std::memcpy(&stored, bytes.data() + end, sizeof(stored));
  if (stored != crcOf(bytes.data(), end))
    throw InvalidArgument(name + ": checkpoint CRC mismatch (corrupt or truncated)");
  Reader in(bytes, end, name);
  const std::uint64_t version = in.u64("the version");
  if (version != kVersion)
    throw InvalidArgument(name + ": checkpoint version " + std::to_string(version) + ", expected 1");
  Checkpoint c;
  const std::uint64_t widthCount = in.u64("the layer count");
  if (widthCount > kMaxWidths)
    throw InvalidArgument(name + ": checkpoint claims " + std::to_string(widthCount) + " layers");
  std::vector<std::uint64_t> widths(widthCount);
  in.read(widths.data(), widths.size(), "the layer widths");
  c.widths.assign(widths.begin(), widths.end());
  c.seed = in.u64("the seed");
  c.globalBatch = in.u64("the batch size");
  c.position = {in.u64("the epoch"), in.u64("the batch"), in.u64("the step")};
  const std::uint64_t count = in.u64("the parameter count");
  if (count > in.remaining() / (2 * sizeof(float))) throw InvalidArgument(name + ": checkpoint truncated (parameters)");
  c.parameters.resize(count);
  c.momentum.resize(count);
  in.read(c.parameters.data(), count, "the parameters");
  in.read(c.momentum.data(), count, "the momentum");
  if (in.remaining() != 0) throw InvalidArgument(name + ": unexpected bytes after the checkpoint's momentum");
  return c;
}

void writeCheckpointFile(const std::string& path, const Checkpoint& checkpoint) {
  const std::vector<std::uint8_t> bytes = serializeCheckpoint(checkpoint);
  const std::string temporary = path + ".tmp";
  std::FILE* file = std::fopen(temporary.c_str(), "wb");
  if (!file) throw InvalidArgument("cannot write checkpoint " + temporary + ": " + std::strerror(errno));
  const bool written = std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size() && std::fflush(file) == 0 &&
                       ::fsync(fileno(file)) == 0;
  const int savedErrno = errno;
  if (std::fclose(file) != 0 || !written) {
    std::remove(temporary.c_str());
    throw InvalidArgument("cannot write checkpoint " + temporary + ": " +
                          std::strerror(savedErrno ? savedErrno : errno));
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const int renameErrno = errno;
    std::remove(temporary.c_str());
    throw InvalidArgument("cannot rename " + temporary + " to " + path + ": " + std::strerror(renameErrno));
  }
}

Checkpoint readCheckpointFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw InvalidArgument(path + ": cannot open checkpoint (" + std::strerror(errno) + ")");
  const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  return parseCheckpoint(bytes, path);
}

void saveCheckpoint(Communicator& comm, const std::string& path, const Checkpoint& checkpoint) {
  runOnRoot(comm, [&] { writeCheckpointFile(path, checkpoint); });
}

Checkpoint loadCheckpoint(Communicator& comm, const std::string& path) {
  std::vector<std::uint8_t> bytes;
  runOnRoot(comm, [&] {
    std::ifstream file(path, std::ios::binary);
    if (!file) throw InvalidArgument(path + ": cannot open checkpoint (" + std::strerror(errno) + ")");
    bytes.assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
    parseCheckpoint(bytes, path);  // validate on rank 0 so the verdict is shared
  });
  std::uint64_t size = bytes.size();
  comm.broadcast(&size, 1, DataType::kUInt64, 0);
  bytes.resize(size);
  comm.broadcast(bytes.data(), bytes.size(), DataType::kUInt8, 0);
  return parseCheckpoint(bytes, path);
}

}  // namespace ringsync::trainer
