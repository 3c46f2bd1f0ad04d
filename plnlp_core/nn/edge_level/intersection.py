r"""Common-neighbour lists and the sums over them on CPUs, compiled by Numba,

.. math::
    N(i) \cap N(j) = \{k \in N(a) : A_{bk} = 1\}, \qquad
    \mathbf{c}_{t} = \sum_{k \in N(i_t) \cap N(j_t)} \mathbf{h}_k, \qquad
    \frac{\partial \mathcal{L}}{\partial \mathbf{h}_k}
    = \sum_{t : k \in N(i_t) \cap N(j_t)}
    \frac{\partial \mathcal{L}}{\partial \mathbf{c}_t},

with :math:`a` the pair's endpoint of lower degree. Where the caller passes
the graph's rows as bit words (:func:`bit_words`, 64 nodes a word), a pair
whose :math:`a` has more neighbours than a row has words ANDs the two rows
word by word (a popcount to count, the set bits to list them), and any other
pair tests each :math:`k \in N(a)` as one bit of row :math:`b`; else a test
is one byte of the graph's dense table where the caller passes it, else the
two sorted CSR rows are merged. Lists are made in two passes over the pairs
(count, then fill at each pair's offset); the sums' backward pass runs per
block of channels, one block a thread: each channel's gradient is added in
the pairs' order whatever the number of threads, so that a run repeats to
the digit. Each loop is a serial kernel over a range of pairs or channels;
with several threads and at least :data:`PARALLEL_PAIRS` pairs, one range a
thread runs in Numba's pool (a launch costs about 0.1 ms, more than a small
graph's whole step). Indices are unsigned, so that no test for a negative
one stands in the inner loops (a third off the backward). On ogbl-ddi
(131,072 pairs, 32.7 M common neighbours, 64 channels, one thread of an AMD
EPYC) the lists take 0.14 s from the bit words (0.35-0.59 s tested in the
dense table), the sums (``embedding_bag``) 0.16 s and their backward 0.24 s,
where the dense bit-row product with its backward took 5.1 s and PyTorch's
sparse product 11 s.
"""
import os
from collections.abc import Callable

import numba
import numpy as np
from numba import njit, prange, uint64

if "NUMBA_THREADING_LAYER" not in os.environ:
    # Numba's own pool: its OpenMP layer loads a second libgomp, whose threads
    # spin between loops and which set torch's thread count in the process
    numba.config.THREADING_LAYER = "workqueue"

PARALLEL_PAIRS = 4096
"""Pairs from which the loops run on several threads."""


@njit(cache=True, nogil=True)
def _ordered(u: int, v: int, degree: np.ndarray) -> tuple[int, int]:
    """The endpoint of lower degree first."""
    return (v, u) if degree[u] > degree[v] else (u, v)


@njit(cache=True, nogil=True)
def _count(crow: np.ndarray, col: np.ndarray, degree: np.ndarray, u: np.ndarray,
           v: np.ndarray, table: np.ndarray, counts: np.ndarray, start: int, stop: int) -> None:
    """``counts[t]`` of the pairs ``start <= t < stop``."""
    n = uint64(degree.size)
    for t in range(start, stop):
        a, b = _ordered(u[t], v[t], degree)
        if table.size:
            base, found = uint64(b) * n, 0
            for p in range(uint64(crow[a]), uint64(crow[a + 1])):
                found += table[base + uint64(col[p])]
            counts[t] = found
        else:
            counts[t] = _merge(crow, col, a, b, counts[:0], uint64(0))


@njit(cache=True, nogil=True)
def _fill(crow: np.ndarray, col: np.ndarray, degree: np.ndarray, u: np.ndarray,
          v: np.ndarray, table: np.ndarray, offsets: np.ndarray, nodes: np.ndarray,
          start: int, stop: int) -> None:
    """The lists of the pairs ``start <= t < stop``: a table test writes
    every candidate and counts only the hits, without a branch on the test."""
    n = uint64(degree.size)
    for t in range(start, stop):
        a, b = _ordered(u[t], v[t], degree)
        if table.size:
            base, w, end = uint64(b) * n, uint64(offsets[t]), uint64(offsets[t + 1])
            for p in range(uint64(crow[a]), uint64(crow[a + 1])):
                k = col[p]
                if w < end:
                    nodes[w] = k
                w += uint64(table[base + uint64(k)])
        else:
            _merge(crow, col, a, b, nodes, uint64(offsets[t]))


@njit(cache=True, nogil=True)
def _merge(crow: np.ndarray, col: np.ndarray, a: int, b: int, out: np.ndarray,
           start: int) -> int:
    """The sorted rows of ``a`` and ``b`` merged: their common columns
    written from ``out[start]`` on where ``out`` has room; their number."""
    p, p_end = uint64(crow[a]), uint64(crow[a + 1])
    q, q_end = uint64(crow[b]), uint64(crow[b + 1])
    found = uint64(0)
    while p < p_end and q < q_end:
        x, y = col[p], col[q]
        if x == y:
            if out.size:
                out[start + found] = x
            found += uint64(1)
            p += uint64(1)
            q += uint64(1)
        elif x < y:
            p += uint64(1)
        else:
            q += uint64(1)
    return found


@njit(cache=True, nogil=True)
def _popcount(x: np.uint64) -> np.uint64:
    """The set bits of ``x`` (the SWAR sum, which LLVM makes one instruction)."""
    x = x - ((x >> uint64(1)) & uint64(0x5555555555555555))
    x = (x & uint64(0x3333333333333333)) + ((x >> uint64(2)) & uint64(0x3333333333333333))
    x = (x + (x >> uint64(4))) & uint64(0x0F0F0F0F0F0F0F0F)
    return (x * uint64(0x0101010101010101)) >> uint64(56)


@njit(cache=True, nogil=True)
def _fill_words(words: np.ndarray, crow: np.ndarray, col: np.ndarray, n: int) -> None:
    r"""Sets bit :math:`k \bmod 64` of word :math:`\lfloor k / 64 \rfloor`
    of row :math:`a` for every entry :math:`(a, k)`."""
    for a in range(n):
        row = words[a]
        for p in range(uint64(crow[a]), uint64(crow[a + 1])):
            k = uint64(col[p])
            row[k >> uint64(6)] |= uint64(1) << (k & uint64(63))


@njit(cache=True, nogil=True)
def _words_count(words: np.ndarray, crow: np.ndarray, col: np.ndarray, degree: np.ndarray,
                 u: np.ndarray, v: np.ndarray, counts: np.ndarray, start: int,
                 stop: int) -> None:
    """``counts[t]`` of the pairs ``start <= t < stop`` from the bit words."""
    width = words.shape[1]
    for t in range(start, stop):
        a, b = _ordered(u[t], v[t], degree)
        row_a, row_b = words[a], words[b]
        found = uint64(0)
        if degree[a] > width:
            for w in range(width):
                found += _popcount(row_a[w] & row_b[w])
        else:
            for p in range(uint64(crow[a]), uint64(crow[a + 1])):
                k = uint64(col[p])
                found += (row_b[k >> uint64(6)] >> (k & uint64(63))) & uint64(1)
        counts[t] = found


@njit(cache=True, nogil=True)
def _words_fill(words: np.ndarray, crow: np.ndarray, col: np.ndarray, degree: np.ndarray,
                u: np.ndarray, v: np.ndarray, offsets: np.ndarray, nodes: np.ndarray,
                start: int, stop: int) -> None:
    """The lists of the pairs ``start <= t < stop`` from the bit words,
    ascending: a word's set bits from the lowest."""
    width = words.shape[1]
    for t in range(start, stop):
        a, b = _ordered(u[t], v[t], degree)
        row_a, row_b = words[a], words[b]
        w, end = uint64(offsets[t]), uint64(offsets[t + 1])
        if degree[a] > width:
            for i in range(width):
                both = row_a[i] & row_b[i]
                while both:
                    low = both & (~both + uint64(1))
                    nodes[w] = uint64(i) * uint64(64) + _popcount(low - uint64(1))
                    w += uint64(1)
                    both ^= low
        else:
            for p in range(uint64(crow[a]), uint64(crow[a + 1])):
                k = uint64(col[p])
                if w < end:
                    nodes[w] = k
                w += (row_b[k >> uint64(6)] >> (k & uint64(63))) & uint64(1)


@njit(cache=True, nogil=True)
def _scatter(nodes: np.ndarray, offsets: np.ndarray, grad: np.ndarray, out: np.ndarray,
             first: int, size: int) -> None:
    """``out[k, c] += grad[t, c]`` for the channels ``first <= c < first +
    size``, every common neighbour ``k`` of every pair ``t``, in order."""
    channels = uint64(grad.shape[1])
    flat_grad, flat_out = grad.reshape(-1), out.reshape(-1)
    for t in range(grad.shape[0]):
        source = uint64(t) * channels + uint64(first)
        for r in range(uint64(offsets[t]), uint64(offsets[t + 1])):
            target = uint64(nodes[r]) * channels + uint64(first)
            for c in range(uint64(size)):
                flat_out[target + c] += flat_grad[source + c]


@njit(parallel=True, cache=True, nogil=True)
def _count_parts(crow: np.ndarray, col: np.ndarray, degree: np.ndarray, u: np.ndarray,
                 v: np.ndarray, table: np.ndarray, counts: np.ndarray, parts: int) -> None:
    for part in prange(parts):
        _count(crow, col, degree, u, v, table, counts, part * u.size // parts,
               (part + 1) * u.size // parts)


@njit(parallel=True, cache=True, nogil=True)
def _fill_parts(crow: np.ndarray, col: np.ndarray, degree: np.ndarray, u: np.ndarray,
                v: np.ndarray, table: np.ndarray, offsets: np.ndarray, nodes: np.ndarray,
                parts: int) -> None:
    for part in prange(parts):
        _fill(crow, col, degree, u, v, table, offsets, nodes, part * u.size // parts,
              (part + 1) * u.size // parts)


@njit(parallel=True, cache=True, nogil=True)
def _scatter_parts(nodes: np.ndarray, offsets: np.ndarray, grad: np.ndarray, out: np.ndarray,
                   parts: int) -> None:
    channels = grad.shape[1]
    for part in prange(parts):
        first = part * channels // parts
        _scatter(nodes, offsets, grad, out, first, (part + 1) * channels // parts - first)


@njit(parallel=True, cache=True, nogil=True)
def _words_count_parts(words: np.ndarray, crow: np.ndarray, col: np.ndarray,
                       degree: np.ndarray, u: np.ndarray, v: np.ndarray, counts: np.ndarray,
                       parts: int) -> None:
    for part in prange(parts):
        _words_count(words, crow, col, degree, u, v, counts, part * u.size // parts,
                     (part + 1) * u.size // parts)


@njit(parallel=True, cache=True, nogil=True)
def _words_fill_parts(words: np.ndarray, crow: np.ndarray, col: np.ndarray,
                      degree: np.ndarray, u: np.ndarray, v: np.ndarray, offsets: np.ndarray,
                      nodes: np.ndarray, parts: int) -> None:
    for part in prange(parts):
        _words_fill(words, crow, col, degree, u, v, offsets, nodes, part * u.size // parts,
                    (part + 1) * u.size // parts)


def bit_words(crow: np.ndarray, col: np.ndarray) -> np.ndarray:
    r"""The graph's rows as bits, ``[N, ceil(N / 64)]`` uint64: node
    :math:`k` of row :math:`a` is bit :math:`k \bmod 64` of word
    :math:`\lfloor k / 64 \rfloor`."""
    n = crow.size - 1
    words = np.zeros((n, words_a_row(n)), np.uint64)
    _fill_words(words, crow, col, n)
    return words


def words_a_row(num_nodes: int) -> int:
    """The 64-bit words of a row of :func:`bit_words`, :math:`\\lceil N / 64 \\rceil`."""
    return -(-num_nodes // 64)


def common_counts(crow: np.ndarray, col: np.ndarray, degree: np.ndarray, u: np.ndarray,
                  v: np.ndarray, table: np.ndarray, threads: int,
                  words: np.ndarray | None = None) -> np.ndarray:
    """:math:`|N(u_t) \\cap N(v_t)|` of every pair, int64, from the graph's
    :func:`bit_words` where given, else from ``table``, the dense ``[N * N]``
    bool table of the edges, or empty to merge CSR rows."""
    counts = np.zeros(u.size, np.int64)
    if words is None:
        _over_pairs(_count, _count_parts, (crow, col, degree, u, v, table, counts), u.size,
                    threads)
    else:
        _over_pairs(_words_count, _words_count_parts, (words, crow, col, degree, u, v, counts),
                    u.size, threads)
    return counts


def common_fill(crow: np.ndarray, col: np.ndarray, degree: np.ndarray, u: np.ndarray,
                v: np.ndarray, table: np.ndarray, offsets: np.ndarray, nodes: np.ndarray,
                threads: int, words: np.ndarray | None = None) -> None:
    """Writes pair ``t``'s common neighbours, ascending, at
    ``nodes[offsets[t]:offsets[t + 1]]`` (found as :func:`common_counts`
    finds them)."""
    if words is None:
        _over_pairs(_fill, _fill_parts, (crow, col, degree, u, v, table, offsets, nodes),
                    u.size, threads)
    else:
        _over_pairs(_words_fill, _words_fill_parts,
                    (words, crow, col, degree, u, v, offsets, nodes), u.size, threads)


def _over_pairs(serial: Callable[..., None], parts: Callable[..., None],
                args: tuple[np.ndarray, ...], pairs: int, threads: int) -> None:
    """``serial(*args, 0, pairs)``, or ``parts(*args, threads)`` (one range
    of pairs a thread in Numba's pool) from :data:`PARALLEL_PAIRS` pairs on
    several threads."""
    if threads > 1 and pairs >= PARALLEL_PAIRS:
        parts(*args, _use_threads(threads))
    else:
        serial(*args, 0, pairs)


def scatter_sums(nodes: np.ndarray, offsets: np.ndarray, grad: np.ndarray, out: np.ndarray,
                 threads: int) -> None:
    """``out[k] += grad[t]`` for every common neighbour ``k`` of every pair
    ``t``, in the pairs' order; one block of channels a thread."""
    if threads > 1 and grad.shape[0] >= PARALLEL_PAIRS:
        _scatter_parts(nodes, offsets, grad, out, _use_threads(min(threads, grad.shape[1])))
    else:
        _scatter(nodes, offsets, grad, out, 0, grad.shape[1])


def _use_threads(count: int) -> int:
    """Numba's threads set to ``count`` (at most as many as it started
    with); the number set."""
    count = max(1, min(count, numba.config.NUMBA_NUM_THREADS))
    numba.set_num_threads(count)
    return count
