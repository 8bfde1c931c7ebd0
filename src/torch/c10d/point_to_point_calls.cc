// send, recv and recv_anysource of RingsyncBackend (point_to_point.h carries the messages). The
// Work settles on the poller thread when the message is done (a receive's result copied into a
// strided or CUDA tensor there first), and its future completes on the group's CompletionPool.
#include <ATen/ATen.h>

#include <memory>
#include <string>
#include <utility>

#include "caller_modes.h"
#include "ringsync/errors.h"
#include "ringsync_backend.h"
#include "ringsync_work.h"
#include "torch_types.h"

namespace ringsync::torch_backend {
namespace {

const at::Tensor& oneTensor(const std::vector<at::Tensor>& tensors, const char* call) {
  if (tensors.size() != 1)
    throw InvalidArgument(std::string("ringsync backend: ") + call + " takes one tensor, got a list of " +
                          std::to_string(tensors.size()));
  return tensors[0];
}

std::string describeMessage(const char* call, const at::Tensor& t, int peer, int tag) {
  const std::string who = peer < 0 ? "any rank" : "rank " + std::to_string(peer);
  return std::string(call) + " of " + dtypeName(t.scalar_type()) + " x " + std::to_string(t.numel()) +
         (std::string(call) == "send" ? " to " : " from ") + who + " (tag " + std::to_string(tag) + ")";
}

}  // namespace

c10::intrusive_ptr<::c10d::Work> RingsyncBackend::send(std::vector<at::Tensor>& tensors, int dstRank, int tag) {
  checkRank(dstRank, "send", "dst");
  return pointToPoint(oneTensor(tensors, "send"), false, dstRank, tag, "send");
}

c10::intrusive_ptr<::c10d::Work> RingsyncBackend::recv(std::vector<at::Tensor>& tensors, int srcRank, int tag) {
  checkRank(srcRank, "recv", "src");
  return pointToPoint(oneTensor(tensors, "recv"), true, srcRank, tag, "recv");
}

c10::intrusive_ptr<::c10d::Work> RingsyncBackend::recvAnysource(std::vector<at::Tensor>& tensors, int tag) {
  return pointToPoint(oneTensor(tensors, "recv_anysource"), true, MPI_ANY_SOURCE, tag, "recv_anysource");
}

c10::intrusive_ptr<::c10d::Work> RingsyncBackend::pointToPoint(at::Tensor tensor, bool receive, int peer, int tag,
                                                               const char* call) {
  state_->throwIfAborted(call);
  const CallerStream stream({tensor}, call);
  // The memory MPI reads or writes: the tensor itself when it is a contiguous host tensor, else a
  // host block (a send's copied now, on the caller's stream; a receive's copied back when done).
  const bool direct = tensor.is_cpu() && tensor.is_contiguous();
  at::Tensor block = direct ? tensor
                            : (receive ? at::empty(tensor.sizes(), tensor.options().device(at::kCPU))
                                       : tensor.to(at::kCPU).contiguous());
  auto work = c10::make_intrusive<RingsyncWork>(getRank(), receive ? ::c10d::OpType::RECV : ::c10d::OpType::SEND,
                                                std::vector<at::Tensor>{tensor}, stream.devices());
  PointToPoint::Message message;
  message.receive = receive;
  message.peer = peer;
  message.tag = tag;
  message.data = block.data_ptr();
  message.bytes = static_cast<std::size_t>(block.nbytes());
  message.what = describeMessage(call, tensor, peer, tag);
  message.memory = std::make_shared<at::Tensor>(block);
  message.done = [work, tensor, block, receive, stream, modes = CallerModes(), completions = progress_.completions(),
                  lane = CompletionPool::laneForWorkIssuedHere(),
                  state = state_](int source, std::exception_ptr error) {
    std::shared_ptr<c10::Event> done;
    if (!error) {
      try {
        const CallerStream::Current current(stream);
        const CallerModes::Applied applied(modes);
        if (receive && !block.is_same(tensor)) tensor.copy_(block);
        done = stream.recordDone();
      } catch (...) {
        error = std::current_exception();
      }
    }
    if (!error && receive) work->setSourceRank(source);
    if (error) {
      try {
        std::rethrow_exception(error);
      } catch (const TimeoutError& e) {
        state->abort(e.what());  // a late message could meet a later receive
      } catch (...) {
      }
    }
    work->settle(std::move(done), error);
    completions->post(
        [work, stream] {
          const CallerStream::Current current(stream);
          work->completeFuture();
        },
        lane);
  };
  messages_->post(std::move(message));
  return work;
}

}  // namespace ringsync::torch_backend
