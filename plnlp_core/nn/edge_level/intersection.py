r"""Common-neighbour lists and the sums over them on CPUs, compiled by Numba,

.. math::
    N(i) \cap N(j) = \{k \in N(a) : A_{bk} = 1\}, \qquad
    \mathbf{c}_{t} = \sum_{k \in N(i_t) \cap N(j_t)} \mathbf{h}_k, \qquad
    \frac{\partial \mathcal{L}}{\partial \mathbf{h}_k}
    = \sum_{t : k \in N(i_t) \cap N(j_t)}
    \frac{\partial \mathcal{L}}{\partial \mathbf{c}_t},

with :math:`a` the pair's endpoint of lower degree. A membership test is
one byte of the graph's dense table where the caller passes it, else the
two sorted CSR rows are merged. Lists are made in two passes over the pairs
(count, then fill at each pair's offset); the sums' backward pass runs per
block of channels, one block a thread: each channel's gradient is added in
the pairs' order whatever the number of threads, so that a run repeats to
the digit. On ogbl-ddi (131,072 pairs, 32.7 M common neighbours, 64
channels, one thread of an AMD EPYC) the lists take 0.28 s, the sums
(``embedding_bag``) 0.2 s and their backward 0.4 s, where the dense bit-row
product with its backward took 5.1 s and PyTorch's sparse product 11 s.
"""
import os

import numba
import numpy as np
from numba import njit, prange

if "NUMBA_THREADING_LAYER" not in os.environ:
    # Numba's own pool: its OpenMP layer's threads spin after each loop,
    # taking a core from torch's threads between the steps' loops
    numba.config.THREADING_LAYER = "workqueue"

BLOCK_CHANNELS = 32
"""Channels a block of :func:`scatter_sums` takes at least: on ogbl-ddi's
64 channels two blocks of 32 on one thread took 0.34 s, one of 64 0.50 s
and four of 16 0.49 s."""


@njit(cache=True, nogil=True)
def _ordered(u: int, v: int, degree: np.ndarray) -> tuple[int, int]:
    """The endpoint of lower degree first."""
    return (v, u) if degree[u] > degree[v] else (u, v)


@njit(parallel=True, cache=True, nogil=True)
def common_counts(crow: np.ndarray, col: np.ndarray, degree: np.ndarray, u: np.ndarray,
                  v: np.ndarray, table: np.ndarray) -> np.ndarray:
    """:math:`|N(u_t) \\cap N(v_t)|` of every pair; ``table`` is the dense
    ``[N * N]`` bool table of the edges, or empty to merge CSR rows."""
    n = degree.size
    counts = np.zeros(u.size, np.int64)
    for t in prange(u.size):
        a, b = _ordered(u[t], v[t], degree)
        if table.size:
            base, found = b * n, 0
            for p in range(crow[a], crow[a + 1]):
                found += table[base + col[p]]
            counts[t] = found
        else:
            counts[t] = _merge(crow, col, a, b, counts[:0], 0)
    return counts


@njit(parallel=True, cache=True, nogil=True)
def common_fill(crow: np.ndarray, col: np.ndarray, degree: np.ndarray, u: np.ndarray,
                v: np.ndarray, table: np.ndarray, offsets: np.ndarray,
                nodes: np.ndarray) -> None:
    """Writes pair ``t``'s common neighbours, ascending, at
    ``nodes[offsets[t]:offsets[t + 1]]``: a table test writes every
    candidate and counts only the hits, without a branch on the test."""
    n = degree.size
    for t in prange(u.size):
        a, b = _ordered(u[t], v[t], degree)
        if table.size:
            base, w, end = b * n, offsets[t], offsets[t + 1]
            for p in range(crow[a], crow[a + 1]):
                k = col[p]
                if w < end:
                    nodes[w] = k
                w += table[base + k]
        else:
            _merge(crow, col, a, b, nodes, offsets[t])


@njit(cache=True, nogil=True)
def _merge(crow: np.ndarray, col: np.ndarray, a: int, b: int, out: np.ndarray,
           start: int) -> int:
    """The sorted rows of ``a`` and ``b`` merged: their common columns
    written from ``out[start]`` on where ``out`` has room; their number."""
    p, p_end, q, q_end, found = crow[a], crow[a + 1], crow[b], crow[b + 1], 0
    while p < p_end and q < q_end:
        x, y = col[p], col[q]
        if x == y:
            if out.size:
                out[start + found] = x
            found += 1
            p += 1
            q += 1
        elif x < y:
            p += 1
        else:
            q += 1
    return found


@njit(parallel=True, cache=True, nogil=True)
def scatter_sums(nodes: np.ndarray, offsets: np.ndarray, grad: np.ndarray, out: np.ndarray,
                 blocks: int) -> None:
    """``out[k] += grad[t]`` for every common neighbour ``k`` of every pair
    ``t``, in the pairs' order; one block of channels a thread."""
    channels = grad.shape[1]
    width = -(-channels // blocks)
    for block in prange(blocks):
        first, last = block * width, min(channels, (block + 1) * width)
        for t in range(grad.shape[0]):
            part = grad[t, first:last]
            for r in range(offsets[t], offsets[t + 1]):
                total = out[nodes[r], first:last]
                for c in range(part.size):
                    total[c] += part[c]


def use_threads(count: int) -> int:
    """Numba's threads set to ``count`` (at most as many as it started
    with), as torch's are; the number set."""
    count = max(1, min(count, numba.config.NUMBA_NUM_THREADS))
    numba.set_num_threads(count)
    return count
