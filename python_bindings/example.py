"""Data-parallel training of a small numpy MLP with ringsync.

    mpirun -np 2 python example.py [--steps 200]

Every rank holds the same model (rank 0's initial weights are broadcast), computes gradients on its
own shard of each global batch, and a GradientAverager averages them across ranks before every SGD
step, so the replicas stay identical. Rank 0 prints the loss (averaged over ranks); at the end every
rank checks that its parameters are bit-identical to rank 0's and exits non-zero if not.
"""

import argparse
import sys

import numpy as np

import ringsync

FEATURES, HIDDEN, CLASSES = 20, 64, 4


def make_dataset(samples=4096, seed=0):
    """A fixed synthetic task (same on every rank): the class is the argmax of a random linear teacher."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((samples, FEATURES)).astype(np.float32)
    teacher = rng.standard_normal((FEATURES, CLASSES)).astype(np.float32)
    return x, np.argmax(x @ teacher, axis=1)


class Mlp:
    """x -> relu(x W1 + b1) W2 + b2 -> softmax cross-entropy; gradients land in persistent arrays."""

    def __init__(self, rng):
        self.params = [
            (rng.standard_normal((FEATURES, HIDDEN)) / np.sqrt(FEATURES)).astype(np.float32),
            np.zeros(HIDDEN, np.float32),
            (rng.standard_normal((HIDDEN, CLASSES)) / np.sqrt(HIDDEN)).astype(np.float32),
            np.zeros(CLASSES, np.float32),
        ]
        self.grads = [np.zeros_like(p) for p in self.params]

    def loss_and_backward(self, x, y, averager):
        w1, b1, w2, b2 = self.params
        hidden = np.maximum(x @ w1 + b1, 0)
        logits = hidden @ w2 + b2
        logits -= logits.max(axis=1, keepdims=True)
        probs = np.exp(logits)
        probs /= probs.sum(axis=1, keepdims=True)
        loss = -np.log(probs[np.arange(len(y)), y] + 1e-12).mean()
        dlogits = probs
        dlogits[np.arange(len(y)), y] -= 1
        dlogits /= len(y)
        # Backward produces the last layer's gradients first: hand each to the averager as soon as it
        # is final, so its bucket can be sent while the rest of backward runs.
        np.matmul(hidden.T, dlogits, out=self.grads[2])
        np.sum(dlogits, axis=0, out=self.grads[3])
        averager.mark_ready(3)
        averager.mark_ready(2)
        dhidden = (dlogits @ w2.T) * (hidden > 0)
        np.matmul(x.T, dhidden, out=self.grads[0])
        np.sum(dhidden, axis=0, out=self.grads[1])
        averager.mark_ready(1)
        averager.mark_ready(0)
        return float(loss)

    def sgd(self, lr):
        for p, g in zip(self.params, self.grads):
            p -= lr * g


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch", type=int, default=256, help="global batch, split across the ranks")
    parser.add_argument("--lr", type=float, default=0.5)
    args = parser.parse_args()

    comm = ringsync.Communicator()
    model = Mlp(np.random.default_rng(1234 + comm.rank))  # deliberately different on every rank...
    for p in model.params:
        comm.broadcast(p, root=0)  # ...until rank 0's initial weights are broadcast
    averager = ringsync.GradientAverager(comm, model.grads)

    x, y = make_dataset()
    order = np.random.default_rng(7)  # same seed everywhere: every rank draws the same global batches
    first = last = None
    for step in range(args.steps):
        batch = order.choice(len(x), size=args.batch, replace=False)
        shard = batch[comm.rank :: comm.size]  # this rank's share of the global batch
        loss = model.loss_and_backward(x[shard], y[shard], averager)
        averager.synchronize()  # every gradient now holds the average over the ranks
        model.sgd(args.lr)
        mean_loss = np.array([loss])
        comm.allreduce(mean_loss, op="avg")
        first = mean_loss[0] if first is None else first
        last = mean_loss[0]
        if comm.rank == 0 and (step % 20 == 0 or step == args.steps - 1):
            print(f"step {step:4d}  loss {last:.4f}", flush=True)

    # Every replica must have applied the same updates: compare each rank's bytes with rank 0's.
    identical = True
    for p in model.params:
        reference = p.copy()
        comm.broadcast(reference, root=0)
        identical &= np.array_equal(reference.view(np.uint32), p.view(np.uint32))
    verdict = np.array([0 if identical else 1], dtype=np.int32)
    comm.allreduce(verdict, op="max")
    if comm.rank == 0:
        print(f"loss {first:.4f} -> {last:.4f} over {args.steps} steps on {comm.size} ranks; "
              f"parameters identical on every rank: {'yes' if verdict[0] == 0 else 'NO'}", flush=True)
    return 0 if verdict[0] == 0 and last < first else 1


if __name__ == "__main__":
    sys.exit(main())
