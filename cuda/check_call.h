// RINGSYNC_CHECK_CALL: the one shape of every RINGSYNC_CHECK_* macro (MPI, NCCL, CUDA). It
// evaluates `call` once and, when isOk(result) is false, calls fail(#call, __FILE__, __LINE__,
// result), which throws the ringsync::Error that names the call, the place and the library's own
// message. Here, in the lowest layer, so that every layer's checks share it.
#pragma once

#define RINGSYNC_CHECK_CALL(call, isOk, fail)                                             \
  do {                                                                                    \
    const auto ringsync_check_rc_ = (call);                                               \
    if (!(isOk(ringsync_check_rc_))) fail(#call, __FILE__, __LINE__, ringsync_check_rc_); \
  } while (0)
