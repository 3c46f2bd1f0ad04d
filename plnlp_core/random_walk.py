"""Random-walk augmentation (paper §4.5): the walks' pairs and weights
(:func:`random_walk_pairs`), where walks start (:func:`walk_starts`), and
one round of them built chunk by chunk (:func:`walk_round`), the one
builder of the library's rounds (:func:`~plnlp_core.assembly.build_walk_rounds`)
and of the pipeline's ``augment`` stage, whose Ray tasks each walk a run of
the chunks.

A round's start nodes are cut into chunks of :data:`WALK_CHUNK`, and chunk
``c`` of round ``r`` walks with its own generator seeded by
:func:`chunk_seed` from ``(seed, r, c)``: how many tasks or processes share
the chunks does not change a pair or a weight."""
import hashlib

import torch
from torch import Tensor

WALK_CHUNK = 1 << 16
"""Start nodes per chunk. A chunk is the unit the walks are seeded by, so
changing it changes the pairs (the ``augment`` stage's cache key holds it);
2^16 keeps a chunk's per-step overhead small against its work and still
gives ogbl-collab's ``edge_endpoints`` rounds (about 2.4 M starts) over 30
chunks to share out."""


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


def chunk_seed(seed: int, walk_round: int, chunk: int) -> int:
    """The seed of chunk ``chunk`` of round ``walk_round`` under the
    experiment's ``seed``: 63 bits of a hash of the three, so no two chunks
    of any round or seed share a stream."""
    digest = hashlib.blake2b(f"{seed}/{walk_round}/{chunk}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1


def walk_chunks(starts: Tensor, chunk_size: int | None = None) -> tuple[Tensor, ...]:
    """``starts`` cut into chunks of ``chunk_size`` (:data:`WALK_CHUNK`
    when unset), in order; the last may be shorter."""
    return starts.split(chunk_size or WALK_CHUNK)


def walk_round(
    adj: Tensor, starts: Tensor, walk_length: int, seed: int, walk_round: int,
    chunks: range | None = None, chunk_size: int | None = None,
) -> tuple[Tensor, Tensor]:
    """Round ``walk_round``'s pairs and weights (:func:`random_walk_pairs`)
    of the chunks ``chunks`` of ``starts`` (all of them when unset), in
    chunk order, each chunk walked with the generator of
    :func:`chunk_seed`. The rounds of any split of the chunks into runs,
    concatenated in order, are the round of all of them.

    Args:
        adj (Tensor): Sparse CSR adjacency, shape ``[N, N]``.
        starts (Tensor): The round's start nodes, shape ``[S]``.
        walk_length (int): :math:`l`.
        seed (int): The experiment's seed.
        walk_round (int): The round's index.
        chunks (range, optional): The chunks to walk.
        chunk_size (int, optional): Start nodes per chunk
            (default: :data:`WALK_CHUNK`).
    """
    pieces = walk_chunks(starts, chunk_size)
    walked = [random_walk_pairs(adj, pieces[c], walk_length,
                                torch.Generator().manual_seed(chunk_seed(seed, walk_round, c)))
              for c in (chunks if chunks is not None else range(len(pieces)))]
    if not walked:
        return torch.empty(0, 2, dtype=torch.long), torch.empty(0)
    return torch.cat([p for p, _ in walked]), torch.cat([w for _, w in walked])
