"""A message-level simulator of the same algorithms as costs.py, to check its closed forms where they
approximate (pipelining, links shared by a node's ranks, the pre/post steps of non-powers of two).

Every algorithm becomes a graph of operations per rank: sends, receives, reductions and copies, each
waiting for the operations it depends on. Resources, each serving in the order work becomes ready:
a rank's CPU (reductions, copies, `overhead` per message sent or received), a node's outgoing link
and its incoming link (beta per byte, shared by the node's ranks). A message between nodes
arrives alpha after its last byte left; inside a node it costs alpha_shm + bytes·2·beta_shm (MPI's
shared memory copies twice). A shared-memory round is every rank's copy into its slot, then every
rank of the node sees all of them alpha_shm after the last. Only for tens of ranks: the graph
holds every message.
"""
from __future__ import annotations

import heapq
import math

import costs


class Schedule:
    def __init__(self, nodes: int, ranks_per_node: int):
        self.nodes, self.L = nodes, ranks_per_node
        self.n = nodes * ranks_per_node
        self.kind, self.rank, self.amount, self.peer, self.deps = [], [], [], [], []

    def _add(self, kind, rank, amount, peer, deps):
        self.kind.append(kind)
        self.rank.append(rank)
        self.amount.append(amount)
        self.peer.append(peer)
        self.deps.append([d for d in deps if d is not None])
        return len(self.kind) - 1

    def compute(self, rank: int, seconds: float, deps) -> int:
        return self._add("cpu", rank, seconds, None, deps)

    def join(self, deps, delay: float = 0.0) -> int:
        """Done `delay` after the last of deps (no resource)."""
        return self._add("join", None, delay, None, deps)

    def message(self, src: int, dst: int, nbytes: float, send_deps, recv_deps) -> tuple:
        """(send op on src, receive op on dst): the receive ends once the data has arrived."""
        send = self._add("send", src, nbytes, dst, send_deps)
        recv = self._add("recv", dst, nbytes, send, recv_deps)
        return send, recv

    def node(self, rank: int) -> int:
        return rank // self.L


def simulate(schedule: Schedule, p: costs.Params) -> float:
    """The time the last operation ends."""
    count = len(schedule.kind)
    waiting = [len(d) for d in schedule.deps]
    successors = [[] for _ in range(count)]
    for i, deps in enumerate(schedule.deps):
        for d in deps:
            successors[d].append(i)
    for i in range(count):  # a receive also waits for its message
        if schedule.kind[i] == "recv":
            waiting[i] += 1
            successors[schedule.peer[i]].append(i)
    ready = [0.0] * count
    finish = [0.0] * count
    arrival = {}
    cpu = [0.0] * schedule.n
    egress = [0.0] * schedule.nodes
    ingress = [0.0] * schedule.nodes
    heap = [(0.0, i) for i in range(count) if waiting[i] == 0]
    heapq.heapify(heap)
    done = 0
    while heap:
        t, i = heapq.heappop(heap)
        kind, rank = schedule.kind[i], schedule.rank[i]
        if kind == "join":
            finish[i] = t + schedule.amount[i]
        elif kind == "cpu":
            start = max(t, cpu[rank])
            finish[i] = cpu[rank] = start + schedule.amount[i]
        elif kind == "send":
            start = max(t, cpu[rank])
            cpu[rank] = start + p.overhead
            dst, nbytes = schedule.peer[i], schedule.amount[i]
            a, b = schedule.node(rank), schedule.node(dst)
            if a == b:
                finish[i] = cpu[rank]
                arrival[i] = cpu[rank] + p.alpha_shm + nbytes * 2 * p.beta_shm
            else:
                out = max(cpu[rank], egress[a])
                egress[a] = out + nbytes * p.beta
                into = max(out + p.alpha, ingress[b])
                ingress[b] = into + nbytes * p.beta
                finish[i] = egress[a]
                arrival[i] = ingress[b]
        else:  # recv: t already includes the arrival
            start = max(t, cpu[rank])
            finish[i] = cpu[rank] = start + p.overhead
        done += 1
        for j in successors[i]:
            value = arrival[i] if (schedule.kind[j] == "recv" and schedule.peer[j] == i) else finish[i]
            ready[j] = max(ready[j], value)
            waiting[j] -= 1
            if waiting[j] == 0:
                heapq.heappush(heap, (ready[j], j))
    if done != count:
        raise RuntimeError(f"simulator: {count - done} operations never became ready (a cycle in the schedule)")
    return max(finish) if finish else 0.0


# ---- schedules: each takes the ranks taking part and every rank's start op, returns its end op ------

def fingerprint_round(sc: Schedule, ranks, start: dict) -> dict:
    """Every rank's 48 B header to every other (round_transport.cc, point to point)."""
    recvs = {r: [] for r in ranks}
    sends = {r: [] for r in ranks}
    for step in range(1, len(ranks)):
        for i, r in enumerate(ranks):
            d = ranks[(i + step) % len(ranks)]
            s, v = sc.message(r, d, 48, [start[r]], [start[d]])
            sends[r].append(s)
            recvs[d].append(v)
    return {r: sc.join(sends[r] + recvs[r]) for r in ranks}


def ring(sc: Schedule, ranks, S: float, p: costs.Params, start: dict, segment: int, depth: int = 16,
         whole_chunks: bool = False) -> dict:
    """ring_pipeline.cc's units (step, segment), `depth` sends and receives in flight."""
    m = len(ranks)
    if m == 1:
        return dict(start)
    chunk = S / m
    k = 1 if whole_chunks else max(1, math.ceil(chunk / segment))
    s = chunk / k
    units = 2 * (m - 1) * k
    rs_units = (m - 1) * k
    send = {r: [None] * units for r in ranks}
    got = {r: [None] * units for r in ranks}  # received (and, in the reduce-scatter, reduced)
    for u in range(units):
        for i, r in enumerate(ranks):
            right = ranks[(i + 1) % m]
            deps = [start[r]]
            if u >= k:
                deps.append(got[r][u - k])
            if u >= depth:
                deps.append(send[r][u - depth])
            recv_deps = [start[right]]
            if u >= depth:
                recv_deps.append(got[right][u - depth])
            if u >= rs_units:
                recv_deps.append(send[right][u - rs_units])
            send[r][u], v = sc.message(r, right, s, deps, recv_deps)
            got[right][u] = sc.compute(right, s * p.gamma, [v]) if u < rs_units else v
    return {r: sc.join([got[r][-1], send[r][-1]]) for r in ranks}


def pairwise(sc: Schedule, a: int, b: int, nbytes: float, deps_a, deps_b, p: costs.Params, reduce: bool,
             both_ways: bool = True, streamed: bool = False) -> tuple:
    """a <-> b exchange nbytes (parts of <= 63 KiB, all posted at once); each reduces what it got,
    once all of it is in (recursive_doubling.cc) or part by part as it lands (streamed).
    Returns (a's end, b's end)."""
    parts = max(1, math.ceil(nbytes / costs.PART))
    size = nbytes / parts
    ends = {a: list(deps_a), b: list(deps_b)}
    recvd = {a: [], b: []}
    directions = ((a, b), (b, a)) if both_ways else ((a, b),)
    for src, dst in directions:
        last = None
        for _ in range(parts):
            s, v = sc.message(src, dst, size, deps_a if src == a else deps_b, deps_b if dst == b else deps_a)
            ends[src].append(s)
            if reduce and streamed:
                v = last = sc.compute(dst, size * p.gamma, [v] + ([last] if last is not None else []))
            recvd[dst].append(v)
    out = []
    for r in (a, b):
        last = sc.join(ends[r] + recvd[r])
        if reduce and recvd[r] and not streamed:
            last = sc.compute(r, nbytes * p.gamma, [last])
        out.append(last)
    return tuple(out)


def recursive_doubling(sc: Schedule, members, P: float, p: costs.Params, start: dict) -> dict:
    """recursive_doubling.cc: fold the extras in, log2 exchanges of the whole payload, send back."""
    m = len(members)
    end = dict(start)
    if m == 1:
        return end
    q = costs.log2_floor(m)
    core = 1 << q
    P += costs.DOUBLING_PREFIX
    for e in range(core, m):  # extra member e folds into e - core
        end[members[e]], end[members[e - core]] = pairwise(
            sc, members[e], members[e - core], P, [end[members[e]]], [end[members[e - core]]], p, True, False)
    for bit in range(q):
        new = dict(end)
        for i in range(core):
            j = i ^ (1 << bit)
            if i < j:
                new[members[i]], new[members[j]] = pairwise(sc, members[i], members[j], P, [end[members[i]]],
                                                           [end[members[j]]], p, True)
        end = new
    for e in range(core, m):
        end[members[e - core]], end[members[e]] = pairwise(
            sc, members[e - core], members[e], P, [end[members[e - core]]], [end[members[e]]], p, False, False)
    return end


def rabenseifner(sc: Schedule, members, P: float, p: costs.Params, start: dict) -> dict:
    """Pre-step (extras send P, reduced), recursive halving (P/2, P/4, ... reduced), recursive
    doubling of the same sizes (copied), post-step (the whole result back to the extras)."""
    m = len(members)
    end = dict(start)
    if m == 1:
        return end
    q = costs.log2_floor(m)
    core = 1 << q
    pre = costs.DOUBLING_PREFIX
    for e in range(core, m):
        end[members[e]], end[members[e - core]] = pairwise(
            sc, members[e], members[e - core], P + pre, [end[members[e]]], [end[members[e - core]]], p, True, False,
            streamed=True)
    bits = list(range(q - 1, -1, -1))  # halving: the farthest partner first
    for phase, reduce in ((bits, True), (bits[::-1], False)):
        for step, bit in enumerate(phase):
            piece = P / 2 ** (step + 1 if reduce else q - step)
            new = dict(end)
            for i in range(core):
                j = i ^ (1 << bit)
                if i < j:
                    new[members[i]], new[members[j]] = pairwise(sc, members[i], members[j], piece + pre,
                                                               [end[members[i]]], [end[members[j]]], p, reduce,
                                                               streamed=True)
            end = new
    for e in range(core, m):
        end[members[e - core]], end[members[e]] = pairwise(
            sc, members[e - core], members[e], P, [end[members[e - core]]], [end[members[e]]], p, False, False)
    return end


def double_binary_tree(sc: Schedule, members, P: float, p: costs.Params, start: dict, segment: float) -> dict:
    """Two heap-ordered binary trees (member i's parent (i-1)//2; the second over the members in
    reverse, so the leaves of one are the inner members of the other), each carrying P/2 in
    segments: reduce up, then broadcast down, segment after segment."""
    m = len(members)
    if m == 1:
        return dict(start)
    half = P / 2
    s = min(segment, half)
    k = max(1, math.ceil(half / s))
    s = half / k
    ends = {r: [start[r]] for r in members}
    for order in (list(members), list(reversed(members))):
        children = {i: [c for c in (2 * i + 1, 2 * i + 2) if c < m] for i in range(m)}
        up = {}  # (position, segment) -> op on that member when its partial is ready to send up
        for j in range(k):
            for i in reversed(range(m)):
                r = order[i]
                deps = [start[r]] + ([up[(i, j - 1)]] if j else [])
                for c in children[i]:
                    send, recv = sc.message(order[c], r, s, [up[(c, j)]], [start[r]])
                    ends[order[c]].append(send)
                    deps.append(sc.compute(r, s * p.gamma, [recv]))
                up[(i, j)] = sc.join(deps)
        down = {}
        for j in range(k):
            for i in range(m):
                r = order[i]
                have = up[(i, j)] if i == 0 else down[(i, j)]
                for c in children[i]:
                    send, recv = sc.message(r, order[c], s, [have], [start[order[c]]])
                    ends[r].append(send)
                    down[(c, j)] = sc.join([recv, up[(c, j)]])
                ends[r].append(have)
    return {r: sc.join(ends[r]) for r in members}


# ---- whole algorithms over N x L ------------------------------------------------------------------------

def node_round(sc: Schedule, node_ranks, copy_bytes: float, p: costs.Params, start: dict) -> dict:
    """Every rank copies copy_bytes into its slot; all see all alpha_shm after the last."""
    published = [sc.compute(r, copy_bytes * p.beta_shm, [start[r]]) for r in node_ranks]
    seen = sc.join(published, p.alpha_shm)
    return {r: seen for r in node_ranks}


def hierarchical_phases(sc, N, L, S, p, start, across) -> dict:
    """split's reduce-scatter in every node, `across` over each local rank's chunk among the nodes,
    split's all-gather (one piece)."""
    end = dict(start)
    for node in range(N):
        ranks = [node * L + i for i in range(L)]
        end.update(node_round(sc, ranks, (L - 1) / L * S, p, end))
        for r in ranks:
            end[r] = sc.compute(r, (L - 1) / L * S * p.gamma, [end[r]])
    for i in range(L):
        members = [node * L + i for node in range(N)]
        end.update(across(members, S / L, end))
    for node in range(N):
        ranks = [node * L + i for i in range(L)]
        end.update(node_round(sc, ranks, S / L, p, end))
        for r in ranks:
            end[r] = sc.compute(r, (L - 1) / L * S * p.beta_shm, [end[r]])
    return end


def build(algorithm: str, N: int, L: int, S: float, p: costs.Params, tree_segment: float = 64 * 1024) -> Schedule:
    sc = Schedule(N, L)
    ranks = list(range(N * L))
    start = {r: sc.join([]) for r in ranks}
    if algorithm == "ring":
        whole = N * L == 2 and N == 2 and costs.WHOLE_CHUNK_FROM <= S / 2 <= costs.WHOLE_CHUNK_UPTO
        fp = fingerprint_round(sc, ranks, start)
        # the fingerprints travel with the first segment: the ring starts at once, ends after both
        end = ring(sc, ranks, S, p, start, costs.SEGMENT_ACROSS_NODES, whole_chunks=whole)
        end = {r: sc.join([end[r], fp[r]]) for r in ranks}
    elif algorithm == "recursive_doubling" and L == 1:
        end = recursive_doubling(sc, ranks, S, p, {r: sc.compute(r, S * p.beta_shm, [start[r]]) for r in ranks})
    elif algorithm == "recursive_doubling":
        shard = S * L >= costs.SHARD_FROM
        part = S / L if shard else S
        end = dict(start)
        for node in range(N):
            node_ranks = [node * L + i for i in range(L)]
            end.update(node_round(sc, node_ranks, S, p, end))
            for r in node_ranks:
                end[r] = sc.compute(r, (L - 1) * part * p.gamma, [end[r]])
        for i in range(L if shard else 1):  # below the shard size the leaders (local rank 0) alone
            end.update(recursive_doubling(sc, [node * L + i for node in range(N)], part, p, end))
        for node in range(N):  # the parts gathered, or the leader's result handed out
            end.update(node_round(sc, [node * L + i for i in range(L)], part, p, end))
        end = {r: sc.compute(r, S * p.beta_shm, [end[r]]) for r in ranks}
    elif algorithm == "rabenseifner" and L == 1:
        end = start
        for piece in costs.butterfly_pieces(N, S, p):  # one butterfly after the other
            end = rabenseifner(sc, ranks, piece, p, end)
    elif algorithm == "rabenseifner":
        end = hierarchical_phases(sc, N, L, S, p, start, lambda members, P, st: rabenseifner(sc, members, P, p, st))
    elif algorithm == "tree" and L == 1:
        end = double_binary_tree(sc, ranks, S, p, start, tree_segment)
    elif algorithm == "tree":
        end = hierarchical_phases(sc, N, L, S, p, start,
                                  lambda members, P, st: double_binary_tree(sc, members, P, p, st, tree_segment))
    elif algorithm == "hierarchical":
        fp = fingerprint_round(sc, ranks, start)
        end = hierarchical_phases(sc, N, L, S, p, fp, lambda members, P, st: ring(
            sc, members, P, p, st, costs.SEGMENT_ACROSS_NODES))
    else:
        raise ValueError(f"simulator: no schedule for {algorithm}")
    if algorithm == "recursive_doubling" and L == 1:  # the payload copied out of the doubling buffer
        end = {r: sc.compute(r, S * p.beta_shm, [end[r]]) for r in ranks}
    sc.join(list(end.values()))
    return sc


def time(algorithm: str, N: int, L: int, S: float, p: costs.Params, **kw) -> float:
    return simulate(build(algorithm, N, L, S, p, **kw), p)
