// Every MPI tag ringsync sends, in one place, one per kind of traffic, so a header never matches a
// data message and no two layers pick the same number. All but the timeline's go over the
// library's own communicators (duplicates of the caller's, MPI_Comm_dup), so they cannot meet a
// message of the caller's; the timeline's merge goes over MPI_COMM_WORLD at MPI_Finalize only,
// when the program sends nothing any more (src/timeline_gather.h).
#pragma once

namespace ringsync::detail {

enum Tag : int {
  kTagHeader = 11,                 // a round's [header | payload] (round_transport.h)
  kTagRing = 12,                   // the ring's segments (ring_pipeline.h)
  kTagBroadcast = 13,              // the chain broadcast's segments (chain_broadcast.h)
  kTagRecursiveDoubling = 15,      // recursive doubling's first part of a message (recursive_doubling.h)
  kTagRecursiveDoublingPart = 16,  // the parts after the first of a long recursive-doubling message
  kTagClock = 17,                  // the clock-offset exchange (src/clock_offset.h)
  kTagTimelineSize = 18,           // a rank's timeline part: its size, then its bytes (src/timeline_gather.h)
  kTagTimelineData = 19,
  // Probed for to make MPI progress (a probe that matches nothing always does): above every tag
  // ringsync sends.
  kTagNeverSent = 31,
};

}  // namespace ringsync::detail
