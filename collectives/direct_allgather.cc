#include "direct_allgather.h"

#include <algorithm>
#include <cstring>

namespace ringsync::detail {
namespace {
constexpr std::size_t kPieceBytes = std::size_t{1} << 30;  // keeps every message within MPI's int count
}

void directAllgather(AlgorithmContext& context, const AllgatherArgs& args) {
  fingerprintRound(context);
  const int rank = context.rank, size = context.size;
  const std::size_t bytesPerRank = args.bytesPerRank;
  const void* send = args.send;
  auto* out = static_cast<std::byte*>(args.recv);
  std::byte* own = out + static_cast<std::size_t>(rank) * bytesPerRank;
  if (bytesPerRank > 0 && own != send) std::memmove(own, send, bytesPerRank);
  if (size == 1 || bytesPerRank == 0) return;

  for (std::size_t offset = 0; offset < bytesPerRank; offset += kPieceBytes) {
    const std::size_t piece = std::min(kPieceBytes, bytesPerRank - offset);
    RequestGroup requests(context.comm, 2 * static_cast<std::size_t>(size - 1));
    std::size_t slot = 0;
    for (int step = 1; step < size; ++step) {
      const int from = (rank - step + size) % size;
      requests.recv(slot++, out + static_cast<std::size_t>(from) * bytesPerRank + offset, piece, from, kTagAllgather);
    }
    for (int step = 1; step < size; ++step)
      requests.send(slot++, own + offset, piece, (rank + step) % size, kTagAllgather);
    requests.waitAll(context.deadline);
  }
}

}  // namespace ringsync::detail
