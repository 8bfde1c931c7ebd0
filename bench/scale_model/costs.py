"""Closed-form cost of every host all-reduce ringsync has, and of the ones it lacks, at N nodes x L
ranks per node and S bytes per rank. Each function follows what the code sends (messages, bytes,
dependent steps, reductions, shared-memory copies); the comment above it names the file and says
which terms come from where. simulator.py replays the same schedules message by message and
test_model.py checks the two against each other.

Parameters (Params): alpha, the latency of one message between nodes (software included); beta,
seconds per byte through a node's link, per direction (the node's L ranks share it); gamma,
seconds per byte reduced (c = a op b); alpha_shm, one shared-memory round (publish, see every
peer's); beta_shm, seconds per byte copied inside a node; overhead, CPU seconds per message posted
or completed (what makes a round of n-1 messages cost more than one).
"""
from __future__ import annotations

import dataclasses
import json
import math

KIB = 1024
MIB = 1024 * KIB

# Constants of the code the costs depend on (where they live).
SEGMENT_ACROSS_NODES = 63 * KIB       # Options::ringSegmentBytesAcrossNodes
SEGMENT_ONE_NODE = 512 * KIB          # Options::ringSegmentBytes
WHOLE_CHUNK_FROM, WHOLE_CHUNK_UPTO = 192 * KIB, 400 * KIB  # kAcrossTwoRanksWholeChunk* (collectives/transfer_constants.h)
SHARD_FROM = 32 * KIB                 # kAcrossNodesShardFromBytes (collectives/transfer_constants.h)
DOUBLING_MAX = 4 * MIB                # kRecursiveDoublingMaxBytes (src/selection_constants.h)
DIRECT_ROUND = 4 * MIB                # kDirectRoundBytes (src/selection_constants.h)
MAX_SMALL = 4 * MIB                   # kMaxSmallBytes (src/selection_constants.h)
POINT_TO_POINT_SMALL = 32 * KIB       # kPointToPointSmallBytes (src/selection_constants.h)
DIRECT_MAX_RANKS = 16                 # kDirectMaxRanks (algorithm_selection.cc)
PIECE = 2 * MIB                       # kPipelinePieceBytes (hierarchical_allreduce.cc)
PART = 63 * KIB                       # RecursiveDoubling::kPartBytes
DOUBLING_PREFIX = 48 + 168            # sizeof(CallHeader) + sizeof(CallSummary)


@dataclasses.dataclass(frozen=True)
class Params:
    alpha: float
    beta: float
    gamma: float
    alpha_shm: float
    beta_shm: float
    overhead: float
    name: str = ""

    def latency_bytes(self) -> int:
        """lambda = (alpha + 2o)/beta, what RINGSYNC_NETWORK_LATENCY_BYTES tells the selection."""
        return max(1, round((self.alpha + 2 * self.overhead) / self.beta))

    def reduce_to_link_ratio(self) -> float:
        """gamma/beta, what RINGSYNC_REDUCE_TO_LINK_RATIO tells the selection."""
        return self.gamma / self.beta

    @staticmethod
    def load(path: str, key: str) -> "Params":
        with open(path) as f:
            values = json.load(f)[key]
        fields = {f.name for f in dataclasses.fields(Params)}
        return Params(name=key, **{k: v for k, v in values.items() if k in fields})


def node_round_bytes(ranks_per_node: int) -> int:
    """What a shared-memory round carries per rank (roundCapacity at the node's size)."""
    if ranks_per_node > DIRECT_MAX_RANKS:
        return 0
    return MAX_SMALL if ranks_per_node < 2 else min(MAX_SMALL, DIRECT_ROUND // (ranks_per_node - 1))


def log2_floor(m: int) -> int:
    return m.bit_length() - 1


# ---- building blocks ---------------------------------------------------------------------------

def fingerprint_round(n: int, p: Params) -> float:
    """round_transport.cc, point-to-point round: every rank posts n-1 header sends and n-1 receives
    (48 B each). Latency alpha, and 2(n-1) messages of CPU at every rank."""
    return p.alpha + 2 * (n - 1) * p.overhead if n > 1 else 0.0


def ring(m: int, S: float, p: Params, alpha: float, beta: float, segment: int, whole_chunks: bool = False,
         beta_chain: float | None = None) -> float:
    """ring_pipeline.cc among m ranks: 2(m-1) dependent steps of one chunk (S/m) each, the chunk
    cut into k segments that stream (16 in flight), each reduced as it arrives. The time is the
    longest of: the link carrying 2(m-1)·k segments; the CPU reducing (m-1)·k of them and handling
    every message; and the chain of 2(m-1) steps one segment must wait for (alpha + transfer
    [+ reduction] per step; beta_chain: the per-byte time along that chain when its edges differ
    from the slowest, beta), followed by the chunk's other k-1 segments. For k = 1 the chain is the longest: 2(m-1)·alpha + 2(m-1)/m·S·beta +
    (m-1)/m·S·gamma, DESIGN.md's formula; for k >> 1 the stream hides alpha."""
    if m <= 1:
        return 0.0
    chunk = S / m
    k = 1 if whole_chunks else max(1, math.ceil(chunk / segment))
    s = chunk / k
    o = p.overhead
    chain_beta = beta if beta_chain is None else beta_chain
    link = 2 * (m - 1) * k * s * beta + alpha
    cpu = (m - 1) * k * s * p.gamma + 2 * (m - 1) * k * 2 * o + alpha
    chain = 2 * (m - 1) * (alpha + s * chain_beta + 2 * o) + (m - 1) * s * p.gamma
    # the chunk's other k-1 segments follow the first one through the last step
    chain += (k - 1) * max(s * beta, s * p.gamma + 4 * o)
    return max(link, cpu, chain)


def exchange(P: float, p: Params, alpha: float, beta_node: float, reduce: bool) -> float:
    """One pairwise step of P bytes each way (parts of <= 63 KiB, all posted at once): latency,
    the node's link carrying what its ranks send in this step (beta_node per byte of this rank's
    message), the per-part overhead, and the reduction of what arrived."""
    parts = max(1, math.ceil(P / PART))
    return alpha + P * beta_node + 2 * parts * p.overhead + (P * p.gamma if reduce else 0.0)


def streamed_exchange(P: float, p: Params, alpha: float, beta_node: float, reduce: bool) -> float:
    """The same step with every part reduced as it lands (the part before is being reduced while
    the next one travels): what a new reduce-scatter should do, unlike recursive_doubling.cc, which
    reduces the whole message once all of it is in."""
    parts = max(1, math.ceil(P / PART))
    part = P / parts
    reduce_part = part * p.gamma if reduce else 0.0
    # the first part's send and the last one's receive are on the chain; the others overlap
    return alpha + 2 * p.overhead + max(P * beta_node, (parts - 1) * (reduce_part + 2 * p.overhead)) + reduce_part


def recursive_doubling(m: int, P: float, p: Params, alpha: float, beta_node: float) -> float:
    """recursive_doubling.cc among m members, P payload bytes (+ header and summary): the m - 2^k
    extra members fold into the first ones (one message, reduced), log2(2^k) exchanges of the whole
    payload (each reduced), the result sent back to the extras: (q + 1 + [m > 2^q])·alpha, the
    fold's own latency hidden (q = floor(log2 m))."""
    if m <= 1:
        return 0.0
    q = log2_floor(m)
    P = P + DOUBLING_PREFIX
    t = q * exchange(P, p, alpha, beta_node, True)
    if m > 1 << q:
        # The partners of the folded members send at once (they fold nothing), so the fold's
        # latency hides behind theirs: its transfer and reduction remain, and the way back.
        t += exchange(P, p, alpha, beta_node, True) - alpha + exchange(P, p, alpha, beta_node, False)
    return t


def rabenseifner(m: int, P: float, p: Params, alpha: float, beta_node: float) -> float:
    """Recursive-halving reduce-scatter + recursive-doubling all-gather among m members (MPICH's
    allreduce for mid sizes, Rabenseifner 2004): with 2^q <= m members in the butterfly, q steps
    of P/2, P/4, ... each reduced, then q steps of the same sizes copied: 2q·alpha +
    2(2^q-1)/2^q·P·beta + (2^q-1)/2^q·P·gamma (parts reduced as they land, so a step costs the
    longer of its transfer and its reduction). Not a power of two: the standard pre/post step
    (the m - 2^q extra members send their whole P to a partner that reduces it, and get the whole
    result back): + 2·alpha + 2·P·beta + P·gamma. The messages carry the call summary (as
    recursive doubling's do), so no whole-communicator fingerprint round."""
    if m <= 1:
        return 0.0
    q = log2_floor(m)
    t = 0.0
    piece = P
    for _ in range(q):
        piece /= 2
        t += streamed_exchange(piece + DOUBLING_PREFIX, p, alpha, beta_node, True)
        t += streamed_exchange(piece + DOUBLING_PREFIX, p, alpha, beta_node, False)
    if m > 1 << q:
        t += streamed_exchange(P + DOUBLING_PREFIX, p, alpha, beta_node, True)
        t += streamed_exchange(P, p, alpha, beta_node, False)
    return t


def double_binary_tree(m: int, P: float, p: Params, alpha: float, beta_node: float, segment: float = 0) -> float:
    """Two binary trees over m members (NCCL's double binary tree), each carrying half of P,
    pipelined in segments of s bytes: a reduce up the trees, then a broadcast down. Every member
    is interior in one tree and a leaf in the other, so in each pipeline slot it sends two segments
    (one per tree; one when m = 2, where each tree is a root and a leaf) and, interior, receives
    and reduces two. A phase (depth d = floor(log2 m) levels) lasts d·(alpha + s·beta [+ s·gamma
    up]) for the first segment to cross the tree, then (k-1) slots of max(w·s·beta, CPU) and the
    other tree's segment behind it: about d·alpha + P·beta for k = P/(2s) >> d. The segment is
    `segment`, or the best of 4 KiB-4 MiB (NCCL tunes its chunk)."""
    if m <= 1:
        return 0.0
    depth = log2_floor(m)
    o = p.overhead
    w = 1 if m == 2 else 2
    best = math.inf
    candidates = [segment] if segment else [4 * KIB * 2 ** i for i in range(11)]
    for s in candidates:
        s = min(s, max(P / 2, 1.0))
        k = max(1, math.ceil(P / 2 / s))
        s = P / 2 / k
        slot_up = max(w * s * beta_node, w * s * p.gamma + 2 * w * o)
        slot_down = max(w * s * beta_node, 2 * w * o)
        tail = (w - 1) * s * beta_node
        # the first segment of each phase carries the header and call summary (h bytes)
        h = DOUBLING_PREFIX * beta_node
        up = depth * (alpha + s * beta_node + h + s * p.gamma + 2 * o) + (k - 1) * slot_up + tail
        down = depth * (alpha + s * beta_node + h + 2 * o) + (k - 1) * slot_down + tail
        best = min(best, up + down)
        if s >= P / 2:
            break
    return best


# ---- shared-memory phases inside a node -----------------------------------------------------------

def node_reduce_scatter(L: int, S: float, p: Params) -> float:
    """split_allreduce.cc round 1 and the own-chunk reduction: each rank copies (L-1)/L·S into its
    slot, then reduces its chunk over L copies: (L-1)·S/L reduced."""
    return p.alpha_shm + (L - 1) / L * S * (p.beta_shm + p.gamma)


def node_all_gather(L: int, S: float, p: Params) -> float:
    """split_allreduce.cc round 2: each rank publishes its chunk (S/L) and copies the L-1 others."""
    return p.alpha_shm + S * p.beta_shm


# ---- ringsync's algorithms ----------------------------------------------------------------------

def t_direct(N: int, L: int, S: float, p: Params) -> float:
    """direct_allreduce.cc: one round carries every rank's S to every peer, every rank reduces n
    payloads. Across nodes (point-to-point) each node's link carries L·(n-L)·S out."""
    n = N * L
    if n == 1:
        return S * p.beta_shm
    reduce = (n - 1) * S * p.gamma
    if N == 1:
        return p.alpha_shm + S * p.beta_shm + reduce
    return fingerprint_round(n, p) + L * (n - L) * S * p.beta + reduce + S * p.beta_shm


def t_split(N: int, L: int, S: float, p: Params) -> float:
    """split_allreduce.cc, one node only: two shared-memory rounds per piece, a piece being what one
    round carries (n/(n-1) of a round's bytes): the pieces add their rounds' latencies."""
    n = N * L
    pieces = max(1, math.ceil(S * (n - 1) / n / node_round_bytes(n)))
    return node_reduce_scatter(n, S, p) + node_all_gather(n, S, p) + (pieces - 1) * 2 * p.alpha_shm


def t_ring(N: int, L: int, S: float, p: Params) -> float:
    """ring_pipeline.cc over all n ranks in rank order (nodes in blocks of L: one edge per node
    crosses it, so a node's link carries one ring's flow, and the step latency is the average of
    N edges' alpha and n-N edges' alpha_shm). The fingerprint round travels with the
    first segment: its latency is hidden, its 2(n-1) messages are not. Two single-rank nodes send
    chunks of 192-400 KiB whole."""
    n = N * L
    if n == 1:
        return S * p.beta_shm
    if N == 1:
        return ring(n, S, p, p.alpha_shm, 2 * p.beta_shm, SEGMENT_ONE_NODE) + 2 * (n - 1) * p.overhead
    whole = n == 2 and WHOLE_CHUNK_FROM <= S / 2 <= WHOLE_CHUNK_UPTO
    # N of the n edges cross a node: a chunk's chain of steps pays the average edge's latency;
    # the stream of segments is paced by the crossing edges.
    alpha = (N * p.alpha + (n - N) * p.alpha_shm) / n
    chain = (N * p.beta + (n - N) * 2 * p.beta_shm) / n
    slowest = p.beta if L == 1 else max(p.beta, 2 * p.beta_shm)  # MPI's shared memory copies twice
    return ring(n, S, p, alpha, slowest, SEGMENT_ACROSS_NODES, whole, chain) + 2 * (n - 1) * p.overhead


def hierarchical_piece_bytes(L: int) -> float:
    """hierarchical_allreduce.cc's pieceElements: what a node round holds, L/(L-1) of it, <= 2 MiB."""
    return min(PIECE, node_round_bytes(L) * L / (L - 1))


def pipelined_pieces(L: int, S: float, p: Params, cross, piece: float) -> float:
    """hierarchical_allreduce.cc's loop over pieces of `piece` bytes: split's reduce-scatter of
    piece 0, then for every piece its cross-node phase (cross(bytes of the piece)) overlapping the
    all-gather of the piece before and the reduce-scatter of the piece after, then the last
    all-gather. Every piece pays its cross-node phase's latency."""
    pieces = max(1, math.ceil(S / piece))
    sizes = [piece] * (pieces - 1) + [S - piece * (pieces - 1)]
    t = node_reduce_scatter(L, sizes[0], p)
    for i, q in enumerate(sizes):
        node_work = (node_all_gather(L, sizes[i - 1], p) if i > 0 else 0.0) + (
            node_reduce_scatter(L, sizes[i + 1], p) if i + 1 < pieces else 0.0)
        t += max(cross(q), node_work)
    return t + node_all_gather(L, sizes[-1], p)


def sequential_phases(L: int, S: float, p: Params, cross, piece: float) -> float:
    """The node's reduce-scatter of the whole message (in node rounds of `piece`), one cross-node
    phase over all of it, the node's all-gather: the cross-node latency paid once, the node phases
    not hidden behind the network."""
    rounds = max(1, math.ceil(S / piece))
    return (rounds - 1) * 2 * p.alpha_shm + node_reduce_scatter(L, S, p) + cross(S) + node_all_gather(L, S, p)


def t_hierarchical(N: int, L: int, S: float, p: Params) -> float:
    """hierarchical_allreduce.cc: a whole-communicator fingerprint round, then per piece (<= 2 MiB,
    a node round's worth): split's reduce-scatter in the node, L rings among the N nodes in
    parallel over S/L each (they share the node's link: L·beta per ring), split's all-gather.
    Piece p's ring overlaps the all-gather of p-1 and the reduce-scatter of p+1. Every piece's
    ring pays its own 2(N-1) step latencies."""
    cross = lambda q: ring(N, q / L, p, p.alpha, L * p.beta, SEGMENT_ACROSS_NODES)  # noqa: E731
    return fingerprint_round(N * L, p) + pipelined_pieces(L, S, p, cross, hierarchical_piece_bytes(L))


def t_recursive_doubling(N: int, L: int, S: float, p: Params, shard_from: float = SHARD_FROM) -> float:
    """recursive_doubling_allreduce.cc. With a hierarchy (L >= 2 on every node): a node round
    carrying every rank's S; when L·S >= 32 KiB each local rank reduces its part S/L over the L
    copies and the L doublings among the N nodes share the node's link (L·part bytes per step),
    below it the node's leader alone reduces all of S and doubles it among the nodes' leaders
    (node_leader.h); then a second node round gathers the parts or hands out the leader's result
    (shard_from: kAcrossNodesShardFromBytes, or another threshold to compare).
    Without one (L = 1): recursive doubling among all ranks, the payload copied in and out."""
    n = N * L
    if n == 1:
        return S * p.beta_shm
    if N == 1 or L == 1 or node_round_bytes(L) < 64 * KIB:
        # across all ranks, the payload copied in and out; with L > 1 the first log2(L) steps pair
        # ranks of the same node (MPI's shared memory), the others cross with all L ranks at once
        t = 2 * S * p.beta_shm
        if L == 1 or N == 1:
            alpha, beta = (p.alpha, p.beta) if N > 1 else (p.alpha_shm, 2 * p.beta_shm)
            return t + recursive_doubling(n, S, p, alpha, beta)
        q = log2_floor(n)
        local_steps = log2_floor(L)
        P = S + DOUBLING_PREFIX
        t += local_steps * exchange(P, p, p.alpha_shm, 2 * p.beta_shm, True)
        t += (q - local_steps) * exchange(P, p, p.alpha, L * p.beta, True)
        if n > 1 << q:
            t += exchange(P, p, p.alpha, p.beta, True) - p.alpha + exchange(P, p, p.alpha, p.beta, False)
        return t
    shard = S * L >= shard_from
    part = S / L if shard else S
    t = p.alpha_shm + S * p.beta_shm + (L - 1) * part * p.gamma
    t += recursive_doubling(N, part, p, p.alpha, (L if shard else 1) * p.beta)
    return t + p.alpha_shm + part * p.beta_shm + S * p.beta_shm


# ---- what ringsync lacks --------------------------------------------------------------------------

PIECE_LATENCIES = 100  # rabenseifner_allreduce.cc's kPieceLatencies


def butterfly_pieces(n: int, S: float, p: Params) -> list:
    """The lengths the flat Rabenseifner all-reduce (one rank per node, or one node) cuts S into:
    pieces of PIECE_LATENCIES x its 2·log2(n) latencies in bytes (the latency the selection is
    told, RINGSYNC_NETWORK_LATENCY_BYTES), run one after the other; the last one shorter."""
    piece = max(1.0, PIECE_LATENCIES * 2 * log2_floor(n) * p.latency_bytes())
    whole = max(0, math.ceil(S / piece) - 1)
    return [piece] * whole + [S - whole * piece]


def t_rabenseifner(N: int, L: int, S: float, p: Params) -> float:
    """Rabenseifner across nodes. L = 1: among all ranks, in place (no staging copies). L >= 2: the
    hierarchical all-reduce's structure with Rabenseifner among the nodes instead of the ring (L
    of them in parallel over S/L each, sharing the node's link) and no whole-communicator round:
    pipelined in pieces as hierarchical_allreduce.cc does, or the node phases around one
    Rabenseifner, whichever is faster (pieces hide the node phases but pay 2·log2(N)·alpha each)."""
    n = N * L
    if n == 1:
        return S * p.beta_shm
    if N == 1:
        return sum(rabenseifner(n, P, p, p.alpha_shm, 2 * p.beta_shm) for P in butterfly_pieces(n, S, p))
    if L == 1:  # in place: the first step reduces send and what arrives into recv, no staging copy
        return sum(rabenseifner(N, P, p, p.alpha, p.beta) for P in butterfly_pieces(N, S, p))
    cross = lambda q: rabenseifner(N, q / L, p, p.alpha, L * p.beta)  # noqa: E731
    piece = hierarchical_piece_bytes(L)
    return min(pipelined_pieces(L, S, p, cross, piece), sequential_phases(L, S, p, cross, piece))


def t_tree(N: int, L: int, S: float, p: Params) -> float:
    """A double binary tree across nodes, in place (inside the node as Rabenseifner above)."""
    n = N * L
    if n == 1:
        return S * p.beta_shm
    if N == 1:
        return double_binary_tree(n, S, p, p.alpha_shm, 2 * p.beta_shm)
    if L == 1:
        return double_binary_tree(N, S, p, p.alpha, p.beta)
    cross = lambda q: double_binary_tree(N, q / L, p, p.alpha, L * p.beta)  # noqa: E731
    piece = hierarchical_piece_bytes(L)
    return min(pipelined_pieces(L, S, p, cross, piece), sequential_phases(L, S, p, cross, piece))


# ---- which can run where ---------------------------------------------------------------------------

def t_rd_sharded(N: int, L: int, S: float, p: Params) -> float:
    """Recursive doubling as it is, but every local rank sending only its 1/L of the message at
    every size (kAcrossNodesShardFromBytes = 0): a changed constant, not a new algorithm."""
    return t_recursive_doubling(N, L, S, p, shard_from=0)


EXISTING = ("direct", "split", "ring", "hierarchical", "recursive_doubling")
ADDED = ("rabenseifner", "tree", "rd_sharded")
TIME = {
    "direct": t_direct, "split": t_split, "ring": t_ring, "hierarchical": t_hierarchical,
    "recursive_doubling": t_recursive_doubling, "rabenseifner": t_rabenseifner, "tree": t_tree,
    "rd_sharded": t_rd_sharded,
}


def available(algorithm: str, N: int, L: int, S: float) -> bool:
    """Whether ringsync can run the algorithm for this layout and size (forced or chosen)."""
    n = N * L
    if algorithm == "direct":  # a round, <= 16 ranks, forced: kMaxSmallBytes/(n-1) per peer
        return n <= DIRECT_MAX_RANKS and (n == 1 or S <= min(MAX_SMALL, DIRECT_ROUND / (n - 1)))
    if algorithm == "split":
        return N == 1 and 1 < n <= DIRECT_MAX_RANKS  # past one round, in pieces of it
    if algorithm == "hierarchical":
        return N > 1 and L > 1 and node_round_bytes(L) >= 64 * KIB
    if algorithm in ("recursive_doubling", "rd_sharded"):
        hierarchy = N > 1 and L > 1 and node_round_bytes(L) >= 64 * KIB
        return n > 1 and S <= DOUBLING_MAX and (not hierarchy or S <= node_round_bytes(L))
    return True


def times(N: int, L: int, S: float, p: Params, algorithms=EXISTING + ADDED) -> dict:
    return {a: TIME[a](N, L, S, p) for a in algorithms if available(a, N, L, S)}
