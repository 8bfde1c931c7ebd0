// Reads IDX files (the MNIST / Fashion-MNIST format: a 4-byte magic 0x00 0x00 <type> <rank>,
// <rank> big-endian uint32 dimensions, then the data), gzip-compressed or plain, through zlib.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ringsync::trainer {

struct IdxArray {
  std::vector<std::size_t> dims;
  std::vector<std::uint8_t> data;  // product(dims) bytes, row-major
};

// An unsigned-byte IDX file with exactly `expectedRank` dimensions. Raises InvalidArgument naming
// `path` and what was wrong: missing/unreadable, corrupt gzip stream, wrong magic, element type or
// rank, absurd dimensions, truncated data, or bytes after the data.
IdxArray readIdxFile(const std::string& path, std::size_t expectedRank);

}  // namespace ringsync::trainer
