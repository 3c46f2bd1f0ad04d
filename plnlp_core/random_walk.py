import torch
from torch import Tensor


def random_walk_pairs(
    adj: Tensor, starts: Tensor, walk_length: int, generator: torch.Generator | None = None,
) -> tuple[Tensor, Tensor]:
    r"""Random-walk augmentation (paper §4.5): one uniform random walk
    :math:`(v_i = u_0, u_1, \dots, u_l)` of length :math:`l` from each start
    gives the positive pairs :math:`(v_i, u_s)` with weight

    .. math::
        \gamma_{i, u_s} = \frac{1}{s}, \quad s = 1, \dots, l.

    A walk that reaches a node without neighbours stays there; pairs of a
    node with itself are dropped.

    Args:
        adj (Tensor): Sparse CSR adjacency, shape ``[N, N]``.
        starts (Tensor): Start nodes, shape ``[S]``.
        walk_length (int): :math:`l`.
        generator (torch.Generator, optional): Source of randomness.

    Returns:
        Pairs of shape ``[P, 2]`` and their weights, shape ``[P]``.
    """
    rowptr, col = adj.crow_indices(), adj.col_indices()
    deg = rowptr[1:] - rowptr[:-1]
    current, steps = starts, []
    for _ in range(walk_length):
        d = deg[current]
        offset = (torch.rand(current.size(0), generator=generator) * d).long()
        # with no edges at all there is nothing to index: every walk stays put
        nxt = col[(rowptr[current] + offset).clamp(max=col.numel() - 1)] if col.numel() else current
        current = torch.where(d > 0, nxt, current)
        steps.append(current)
    visited = torch.stack(steps, dim=-1)
    step = torch.arange(1, walk_length + 1, dtype=torch.float).expand_as(visited)
    source = starts.unsqueeze(-1).expand_as(visited)
    keep = visited != source
    pairs = torch.stack([source[keep], visited[keep]], dim=-1)
    return pairs, 1.0 / step[keep]


def walk_starts(kind: str, num_nodes: int, edges: Tensor) -> Tensor:
    """Where walks start: every node once (``"all"``), every endpoint of
    ``edges`` once (``"train_endpoints"``), or both endpoints of every edge,
    so a node starts as many walks as it has edges (``"edge_endpoints"``,
    as the authors' code)."""
    if kind == "all":
        return torch.arange(num_nodes)
    if kind == "edge_endpoints":
        return edges.reshape(-1)
    return torch.unique(edges.reshape(-1))
