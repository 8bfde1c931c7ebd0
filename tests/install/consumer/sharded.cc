// The README's sharded example (ZeRO-1/2): ringsync::ShardedGradientAverager reduce-scatters the
// gradients, each rank updates, and keeps momentum for, only the elements it owns, and the
// parameters are all-gathered, so every rank ends each step with the same full model.
// Run: mpirun -np 2 ./consumer_sharded
#include <ringsync/ringsync.h>

#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
  ringsync::MpiEnvironment mpi(&argc, &argv);  // MPI_THREAD_MULTIPLE: buckets overlap backward
  ringsync::Communicator comm(MPI_COMM_WORLD);
  const std::vector<std::size_t> sizes = {1000, 10, 1};  // the last is smaller than the ranks
  std::vector<std::vector<float>> grads, params;
  std::vector<ringsync::GradientBuffer> g, p;
  for (std::size_t size : sizes) {
    grads.emplace_back(size);
    params.emplace_back(size, 1.0f);  // every rank starts from the same parameters
  }
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    g.push_back({grads[i].data(), sizes[i], ringsync::DataType::kFloat32});
    p.push_back({params[i].data(), sizes[i], ringsync::DataType::kFloat32});
  }
  ringsync::ShardedGradientAverager sharded(comm, g, p);  // collective; the partition is agreed here
  std::vector<std::vector<float>> momentum;               // for this rank's shard only
  for (std::size_t i = 0; i < sizes.size(); ++i) momentum.emplace_back(sharded.shard(i).count(), 0.0f);

  const float lr = 0.1f, beta = 0.9f;
  for (int step = 0; step < 3; ++step) {
    for (std::size_t i = sizes.size(); i-- > 0;) {                        // backward: last tensor first
      for (float& x : grads[i]) x = static_cast<float>(comm.rank() + 1);  // the average is (n + 1) / 2
      sharded.markReady(i);
    }
    sharded.synchronize();  // grads[i] holds the average on shard(i)
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const ringsync::ShardRange own = sharded.shard(i);
      for (std::size_t k = own.begin; k < own.end; ++k) {  // SGD with momentum, on the shard only
        float& v = momentum[i][k - own.begin];
        v = beta * v + grads[i][k];
        params[i][k] -= lr * v;
      }
      sharded.markUpdated(i);  // its bucket's all-gather may start
    }
    sharded.gatherParameters();  // or waitForParameter(i) before the next forward reads params[i]
  }

  // Every element took the same three updates: the same float operations give the same bits.
  const float average = (comm.size() + 1) / 2.0f;
  float v = 0, expected = 1.0f;
  for (int step = 0; step < 3; ++step) {
    v = beta * v + average;
    expected -= lr * v;
  }
  bool ok = true;
  for (const std::vector<float>& tensor : params)
    for (float x : tensor) ok = ok && x == expected;
  std::size_t total = 0;
  for (std::size_t size : sizes) total += size;
  std::printf(
      "rank %d of %d: updates %zu of %zu parameters (momentum %zu bytes); parameters %.6f (expected %.6f): %s\n",
      comm.rank(), comm.size(), sharded.shardElements(), total, sharded.shardElements() * sizeof(float), params[0][0],
      expected, ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
