#include "model_state.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>

#include <ATen/ATen.h>
#include <torch/nn/module.h>

#include "ringsync/errors.h"
#include "ringsync/torch.h"
#include "tensor_types.h"

namespace ringsync::torch::detail {
namespace {

class Fnv1a {
 public:
  void add(const void* data, std::size_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < bytes; ++i) hash_ = (hash_ ^ p[i]) * 1099511628211ull;
  }
  void add(std::uint64_t value) { add(&value, sizeof value); }
  std::uint64_t value() const { return hash_; }

 private:
  std::uint64_t hash_ = 1469598103934665603ull;
};

std::uint64_t tensorHash(const NamedTensor& named) {
  Fnv1a hash;
  hash.add(named.name.data(), named.name.size());
  const at::Tensor& t = named.tensor;
  hash.add(static_cast<std::uint64_t>(t.dim()));
  for (int64_t d = 0; d < t.dim(); ++d) hash.add(static_cast<std::uint64_t>(t.size(d)));
  hash.add(static_cast<std::uint64_t>(t.scalar_type()));
  hash.add(t.requires_grad() ? 1 : 0);
  hash.add(static_cast<std::uint64_t>(t.device().type()));
  return hash.value();
}

std::vector<const NamedTensor*> allTensors(const ModelTensors& model) {
  std::vector<const NamedTensor*> all;
  for (const NamedTensor& p : model.parameters) all.push_back(&p);
  for (const NamedTensor& b : model.buffers) all.push_back(&b);
  return all;
}

std::string describeEntry(const NamedTensor& named) {
  return "'" + named.name + "' (" + describeTensor(named.tensor) +
         (named.tensor.requires_grad() ? ", requires_grad" : "") + ")";
}

// Equal counts everywhere, different contents: the first entry whose hash differs from rank 0's.
std::string firstDifference(Communicator& comm, const std::vector<const NamedTensor*>& all) {
  std::vector<std::uint64_t> mine(all.size());
  for (std::size_t i = 0; i < all.size(); ++i) mine[i] = tensorHash(*all[i]);
  std::vector<std::uint64_t> every(mine.size() * static_cast<std::size_t>(comm.size()));
  comm.allgather(mine.data(), every.data(), mine.size(), DataType::kUInt64);
  for (std::size_t i = 0; i < all.size(); ++i) {
    std::string ranks;
    for (int r = 1; r < comm.size(); ++r)
      if (every[static_cast<std::size_t>(r) * mine.size() + i] != every[i])
        ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
    if (!ranks.empty())
      return "rank(s) " + ranks + " differ from rank 0 first at tensor " + std::to_string(i) + " (this rank's is " +
             describeEntry(*all[i]) + ")";
  }
  return "the lists differ";
}

}  // namespace

ModelTensors collectModel(::torch::nn::Module& module) {
  ModelTensors model;
  for (const auto& item : module.named_parameters(/*recurse=*/true))
    model.parameters.push_back({item.key(), item.value()});
  for (const auto& item : module.named_buffers(/*recurse=*/true)) model.buffers.push_back({item.key(), item.value()});
  return model;
}

void checkSameModelOnAllRanks(Communicator& comm, const ModelTensors& model) {
  const std::vector<const NamedTensor*> all = allTensors(model);
  Fnv1a hash;
  for (const NamedTensor* named : all) hash.add(tensorHash(*named));
  constexpr std::size_t kWords = 3;
  const std::uint64_t mine[kWords] = {model.parameters.size(), model.buffers.size(), hash.value()};
  std::vector<std::uint64_t> every(kWords * static_cast<std::size_t>(comm.size()));
  comm.allgather(mine, every.data(), kWords, DataType::kUInt64);
  std::string counts;
  bool contentsDiffer = false;
  for (int r = 1; r < comm.size(); ++r) {
    const std::uint64_t* theirs = every.data() + static_cast<std::size_t>(r) * kWords;
    if (theirs[0] != every[0] || theirs[1] != every[1])
      counts += (counts.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r) + " holds " +
                std::to_string(theirs[0]) + " parameters and " + std::to_string(theirs[1]) + " buffers, rank 0 " +
                std::to_string(every[0]) + " and " + std::to_string(every[1]);
    contentsDiffer = contentsDiffer || theirs[2] != every[2];
  }
  const std::string prefix = "DistributedDataParallel: the ranks hold different models: ";
  if (!counts.empty()) throw MismatchError(prefix + counts);
  if (contentsDiffer) throw MismatchError(prefix + firstDifference(comm, all));
}

void broadcastFromRankZero(Communicator& comm, const std::vector<NamedTensor>& tensors) {
  // Groups keep the model's order, so every rank forms the same groups in the same order.
  std::vector<std::vector<at::Tensor>> groups;
  std::map<std::pair<int, std::string>, std::size_t> groupOf;
  for (const NamedTensor& named : tensors) {
    if (named.tensor.numel() == 0) continue;
    const auto key = std::make_pair(static_cast<int>(named.tensor.scalar_type()), named.tensor.device().str());
    const auto [it, added] = groupOf.emplace(key, groups.size());
    if (added) groups.emplace_back();
    groups[it->second].push_back(named.tensor);
  }
  const at::NoGradGuard noGrad;
  for (const std::vector<at::Tensor>& group : groups) {
    std::vector<at::Tensor> flat;
    flat.reserve(group.size());
    for (const at::Tensor& t : group) flat.push_back(t.reshape(-1));
    const at::Tensor block = at::cat(flat);
    broadcast(comm, block, /*root=*/0);
    if (comm.rank() == 0) continue;
    int64_t offset = 0;
    for (const at::Tensor& t : group) {
      t.copy_(block.narrow(0, offset, t.numel()).view(t.sizes()));
      offset += t.numel();
    }
  }
}

}  // namespace ringsync::torch::detail
