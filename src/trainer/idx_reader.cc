#include "idx_reader.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <sstream>

#include <zlib.h>

#include "ringsync/errors.h"

namespace ringsync::trainer {

namespace {

constexpr std::uint8_t kUnsignedByteType = 0x08;
// Far above Fashion-MNIST (47 MB) but small enough that a garbage header cannot ask for terabytes.
constexpr std::size_t kMaxDataBytes = std::size_t{1} << 32;
constexpr unsigned kReadChunkBytes = 1u << 20;

struct GzCloser {
  void operator()(gzFile_s* file) const { gzclose(file); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

[[noreturn]] void fail(const std::string& path, const std::string& what) { throw InvalidArgument(path + ": " + what); }

std::string hex(unsigned value) {
  std::ostringstream out;
  out << "0x" << std::hex << value;
  return out.str();
}

// Reads up to `bytes` bytes; returns how many were read (fewer only at the end of the stream).
std::size_t readSome(gzFile_s* file, const std::string& path, std::uint8_t* out, std::size_t bytes) {
  std::size_t done = 0;
  while (done < bytes) {
    const unsigned want = static_cast<unsigned>(std::min<std::size_t>(bytes - done, kReadChunkBytes));
    const int got = gzread(file, out + done, want);
    if (got < 0) {
      int code = Z_OK;
      const char* message = gzerror(file, &code);
      fail(path, std::string("corrupt or unreadable gzip stream (") + (message ? message : "unknown zlib error") + ")");
    }
    if (got == 0) break;
    done += static_cast<std::size_t>(got);
  }
  return done;
}

std::vector<std::size_t> readHeader(gzFile_s* file, const std::string& path, std::size_t expectedRank) {
  std::uint8_t magic[4] = {};
  if (readSome(file, path, magic, 4) != 4) fail(path, "too short for an IDX header (fewer than 4 bytes)");
  const unsigned magicValue = (unsigned{magic[0]} << 24) | (unsigned{magic[1]} << 16) | (unsigned{magic[2]} << 8) |
                              magic[3];
  if (magic[0] != 0 || magic[1] != 0) fail(path, "bad magic " + hex(magicValue) + " (not an IDX file)");
  if (magic[2] != kUnsignedByteType) {
    fail(path, "IDX element type " + hex(magic[2]) + ", expected 0x8 (unsigned byte)");
  }
  if (magic[3] != expectedRank) {
    fail(path, "IDX file has " + std::to_string(magic[3]) + " dimensions, expected " + std::to_string(expectedRank) +
                   " (magic " + hex(magicValue) + ")");
  }
  std::vector<std::size_t> dims(expectedRank);
  std::size_t total = 1;
  for (std::size_t d = 0; d < expectedRank; ++d) {
    std::uint8_t b[4] = {};
    if (readSome(file, path, b, 4) != 4)
      fail(path, "truncated IDX header (dimension " + std::to_string(d) + " missing)");
    dims[d] = (std::size_t{b[0]} << 24) | (std::size_t{b[1]} << 16) | (std::size_t{b[2]} << 8) | b[3];
    total *= dims[d] == 0 ? 1 : dims[d];
    if (total > kMaxDataBytes) fail(path, "IDX dimensions describe more than 4 GiB of data (corrupt header?)");
  }
  return dims;
}

}  // namespace

IdxArray readIdxFile(const std::string& path, std::size_t expectedRank) {
  errno = 0;
  GzFile file(gzopen(path.c_str(), "rb"));
  if (!file)
    fail(path, std::string("cannot open (") + (errno ? std::strerror(errno) : "zlib could not allocate") + ")");
  IdxArray array;
  array.dims = readHeader(file.get(), path, expectedRank);
  std::size_t bytes = 1;
  for (std::size_t dim : array.dims) bytes *= dim;
  array.data.resize(bytes);
  const std::size_t got = readSome(file.get(), path, array.data.data(), bytes);
  if (got != bytes) {
    fail(path, "truncated: the header promises " + std::to_string(bytes) + " data bytes, the file holds " +
                   std::to_string(got));
  }
  std::uint8_t extra = 0;
  if (readSome(file.get(), path, &extra, 1) != 0) {
    fail(path, "unexpected bytes after the " + std::to_string(bytes) + " data bytes the header describes");
  }
  return array;
}

}  // namespace ringsync::trainer
