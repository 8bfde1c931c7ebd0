#include "call_check.h"

#include <string>
#include <vector>

#include "ringsync/errors.h"

namespace ringsync::detail {

void checkSameCall(const HeaderExchange& exchange) {
  const CallHeader& reference = exchange.header(0);
  std::string message;
  for (int r = 1; r < exchange.size(); ++r) {
    const CallHeader& other = exchange.header(r);
    if (sameCall(other, reference)) continue;
    message += message.empty() ? "" : "; ";
    message += "rank " + std::to_string(r) + " called " + describeCall(other) + "; rank 0 called " +
               describeCall(reference);
    if (describeCall(other) == describeCall(reference))
      message += " (with different RINGSYNC_* settings: segment, small-message or algorithm options)";
  }
  if (!message.empty()) throw MismatchError("ranks disagree about a collective: " + message);
}

void checkFiniteInputs(const HeaderExchange& exchange) {
  std::string ranks;
  for (int r = 0; r < exchange.size(); ++r)
    if (exchange.header(r).flags & kFlagNonFiniteInput) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
  if (!ranks.empty())
    throw NonFiniteError(describeCall(exchange.header(0)) + ": input holds NaN or Inf on rank(s) " + ranks +
                         " (RINGSYNC_CHECK_FINITE=1)");
}

void checkPayloadBytes(const HeaderExchange& exchange, int rank, std::size_t expectedBytes) {
  if (exchange.payloadBytes(rank) != expectedBytes)
    throw MismatchError(describeCall(exchange.header(rank)) + ": rank " + std::to_string(rank) + " sent " +
                        std::to_string(exchange.payloadBytes(rank)) + " bytes, expected " +
                        std::to_string(expectedBytes) + " (ranks disagree; RINGSYNC_CHECK=1 names the calls)");
}

}  // namespace ringsync::detail
