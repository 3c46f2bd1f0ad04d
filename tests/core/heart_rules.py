"""HeaRT's negative generator written out rule by rule, one pair side at a
time, as its description reads (dicts, lists and ``scipy.stats.rankdata``):
the slow yardstick that :mod:`plnlp_core.scoring.hard_negatives` must match."""
import numpy as np
import scipy.sparse as sp
import torch
from scipy.stats import rankdata


def push_pagerank(neighbours: list[list[int]], source: int, alpha: float,
                  eps: float) -> dict[int, float]:
    """Andersen's push from ``source``: pop the last queued node, add its
    residual to its score, spread (1 - alpha) / degree of it to each
    neighbour, queue a neighbour whose residual reaches alpha * eps * degree."""
    score, residual, queue = {source: 0.0}, {source: alpha}, [source]
    while queue:
        node = queue.pop()
        pushed = residual.get(node, 0.0)
        score[node] = score.get(node, 0.0) + pushed
        residual[node] = 0.0
        for other in neighbours[node]:
            spread = (1 - alpha) * pushed / len(neighbours[node])
            residual[other] = residual.get(other, 0.0) + spread
            if residual[other] >= alpha * eps * len(neighbours[other]) and other not in queue:
                queue.append(other)
    return score


def rank_row(row: np.ndarray) -> np.ndarray:
    """Positives ranked from the largest (ties at their best place), 0s one
    after the last, -1s two after."""
    row = row.copy()
    positive = row > 0
    ranks = rankdata(row[positive], method="min")
    top = ranks.max() if len(ranks) else 0
    ranks = top - ranks + 1
    worst = ranks.max() if len(ranks) else 0
    row[positive] = ranks
    row[row == 0] = worst + 1
    row[row < 0] = worst + 2
    return row


def literal_negatives(edges: torch.Tensor, num_nodes: int, pos: torch.Tensor,
                      masked_edges: torch.Tensor | None, num_negatives: int, eps: float,
                      alpha: float = 0.15,
                      rng: np.random.RandomState | None = None) -> torch.Tensor:
    rng = rng or np.random.RandomState(42)
    k = num_negatives // 2
    adj = _binary(edges, num_nodes)
    degree = adj.sum(axis=0).astype(np.float32)
    scale = np.float32(1) / np.where(degree > 0, degree, np.inf).astype(np.float32)
    ra = (adj @ sp.csr_array(adj.multiply(scale[None, :]))).toarray()
    neighbours = [list(adj.indices[adj.indptr[i]:adj.indptr[i + 1]]) for i in range(num_nodes)]
    masked = None if masked_edges is None else _binary(masked_edges, num_nodes).toarray() > 0
    out = []
    for a, b in pos.tolist():
        sides = []
        for anchor, other in ((a, b), (b, a)):
            mask = np.zeros(num_nodes, dtype=bool) if masked is None else masked[anchor].copy()
            mask[anchor] = mask[other] = True
            ppr = np.zeros(num_nodes, dtype=np.float32)
            for node, value in push_pagerank(neighbours, anchor, alpha, eps).items():
                ppr[node] = value
            cn = ra[anchor].copy()
            cn[mask], ppr[mask] = -1, -1
            zero = (cn == 0) & (ppr == 0)
            merged = np.minimum(rank_row(cn), rank_row(ppr)).astype(np.float32)
            ranked = num_nodes - zero.sum() - mask.sum()
            if ranked >= k:
                chosen = torch.topk(torch.from_numpy(-merged), k).indices.numpy()
            else:
                best = torch.topk(torch.from_numpy(-merged), ranked).indices.numpy()
                chosen = np.concatenate([best, rng.choice(zero.nonzero()[0], k - ranked)])
            sides.append(chosen)
        out.append(np.concatenate(sides))
    return torch.from_numpy(np.stack(out)).long()


def _binary(edges: torch.Tensor, num_nodes: int) -> sp.csr_array:
    ends = edges.numpy()
    rows = np.concatenate([ends[:, 0], ends[:, 1]])
    cols = np.concatenate([ends[:, 1], ends[:, 0]])
    adj = sp.csr_array((np.ones(len(rows), dtype=np.float32), (rows, cols)),
                       shape=(num_nodes, num_nodes))
    adj.data[:] = 1.0
    adj.sort_indices()
    return adj
