// The torch.distributed collectives ringsync does not have: each raises NotImplementedError naming
// itself and the way out, instead of c10d's generic "does not support" RuntimeError.
#include <c10/util/Exception.h>

#include "ringsync_backend.h"

namespace ringsync::torch_backend {
namespace {

[[noreturn]] void notImplemented(const char* name) {
  TORCH_CHECK_NOT_IMPLEMENTED(false, "ringsync backend does not implement ", name,
                              " (it has allreduce, broadcast, allgather, all_gather_single, reduce_scatter, "
                              "reduce_scatter_single, barrier); use a 'gloo' group for this collective");
  std::abort();  // not reached: the check above always throws
}

}  // namespace

c10::intrusive_ptr<::c10d::Work> RingsyncBackend::reduce(std::vector<at::Tensor>&, const ::c10d::ReduceOptions&) {
  notImplemented("reduce");
}

c10::intrusive_ptr<::c10d::Work> RingsyncBackend::gather(std::vector<std::vector<at::Tensor>>&,
                                                         std::vector<at::Tensor>&, const ::c10d::GatherOptions&) {
  notImplemented("gather");
}

c10::intrusive_ptr<::c10d::Work> RingsyncBackend::scatter(std::vector<at::Tensor>&,
                                                          std::vector<std::vector<at::Tensor>>&,
                                                          const ::c10d::ScatterOptions&) {
  notImplemented("scatter");
}

c10::intrusive_ptr<::c10d::Work> RingsyncBackend::alltoall(std::vector<at::Tensor>&, std::vector<at::Tensor>&,
                                                           const ::c10d::AllToAllOptions&) {
  notImplemented("alltoall");
}

#if RINGSYNC_C10D_SINGLE_NAMES
c10::intrusive_ptr<::c10d::Work> RingsyncBackend::all_to_all_single(at::Tensor&, at::Tensor&, std::vector<int64_t>&,
                                                                    std::vector<int64_t>&,
                                                                    const ::c10d::AllToAllOptions&) {
  notImplemented("all_to_all_single");
}
#endif

c10::intrusive_ptr<::c10d::Work> RingsyncBackend::alltoall_base(at::Tensor&, at::Tensor&, std::vector<int64_t>&,
                                                                std::vector<int64_t>&, const ::c10d::AllToAllOptions&) {
  notImplemented("alltoall_base");
}

c10::intrusive_ptr<::c10d::Work> RingsyncBackend::send(std::vector<at::Tensor>&, int, int) { notImplemented("send"); }

c10::intrusive_ptr<::c10d::Work> RingsyncBackend::recv(std::vector<at::Tensor>&, int, int) { notImplemented("recv"); }

c10::intrusive_ptr<::c10d::Work> RingsyncBackend::recvAnysource(std::vector<at::Tensor>&, int) {
  notImplemented("recv_anysource");
}

}  // namespace ringsync::torch_backend
