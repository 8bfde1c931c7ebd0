// Cross-rank consistency: after a HeaderExchange every rank holds every rank's call fingerprint.
// All ranks run the same comparison on the same data, so they reach the same verdict and raise
// the same error, naming the same ranks, without another message.
#pragma once

#include "collectives/header_exchange.h"

namespace ringsync::detail {

// MismatchError naming every rank whose call differs from rank 0's, and both calls.
void checkSameCall(const HeaderExchange& exchange);

// NonFiniteError naming the ranks that flagged NaN/Inf in their input (RINGSYNC_CHECK_FINITE).
void checkFiniteInputs(const HeaderExchange& exchange);

// With RINGSYNC_CHECK=0 the fingerprints are not compared, but a payload of the wrong size is
// still refused rather than read past its end.
void checkPayloadBytes(const HeaderExchange& exchange, int rank, std::size_t expectedBytes);

}  // namespace ringsync::detail
