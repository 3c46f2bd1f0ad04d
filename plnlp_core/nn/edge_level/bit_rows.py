r"""The common neighbours of pairs on a small dense graph (ogbl-ddi) as one
dense product per chunk of pairs,

.. math::
    \mathbf{c}_{ij} = \sum_{k \in N(i) \cap N(j)} \mathbf{h}_k
    = (\mathbf{A}_i \odot \mathbf{A}_j)\, \mathbf{H},

with the adjacency's rows packed 8 nodes a byte (:class:`BitRows`): the
rows :math:`\mathbf{A}_i \odot \mathbf{A}_j` of a chunk are one ``&`` of
packed bytes and one table lookup from bytes to 0/1 entries. On CPUs a
chunk fits a quarter of the last-level cache, at most 8 MiB
(:func:`chunk_bytes`). In fp32 on a CPU with int8 matrix units the rows
are int8 and meet :math:`\mathbf{H}` in int8 digits
(:mod:`~plnlp_core.nn.edge_level.fixed_point`), each chunk made in the
same buffers, again in the backward pass; otherwise the chunks are kept for
the backward pass when the free memory allows (:func:`mask_budget`).
"""
import functools
import os
from pathlib import Path

import torch
from torch import Tensor

from plnlp_core.nn.edge_level.fixed_point import FixedPoint, int8_products

MASK_MEMORY_SHARE = 0.25
"""The share of the free memory the rows :math:`\\mathbf{A}_i \\odot
\\mathbf{A}_j` of one step may hold."""

GPU_CHUNK_BYTES = 2**28
"""The most bytes of rows made at a time on a GPU (256 MiB): larger chunks
gain nothing once the product runs at its peak."""

CACHE_SHARE = 4
"""On CPUs a chunk of rows is the last-level cache over this: made, the
rows are still in cache when the product reads them. On ogbl-ddi (131,072
pairs, 64 channels, a 2-core EPYC with 32 MiB of L3) chunks of 8 MiB made
the product with its backward 1.5x faster in bfloat16 (0.90 s against
1.37 s) and 1.4x in fp32 (1.59 s against 2.28 s) than chunks of 256 MiB;
4, 16 and 32 MiB were slower than 8."""

CPU_CHUNK_BYTES = 2**23
"""The most bytes of rows made at a time on a CPU (8 MiB): a virtual
machine may report its host's whole cache (480 MiB on a 2-core Xeon VM,
where int8 rows in chunks of 8 MiB took 0.86 s, forward and backward, on
ogbl-ddi's 131,072 pairs, and in chunks of 64 MiB 1.5 s)."""


class BitRows:
    r"""The rows of a symmetric 0/1 adjacency, 8 nodes a byte: byte
    :math:`w` of row :math:`i` holds :math:`A_{i,8w+b}` in bit :math:`b`.

    Args:
        dense (Tensor): The adjacency, bool, shape ``[N, N]``.
    """

    def __init__(self, dense: Tensor) -> None:
        self.num_nodes = dense.size(0)
        self.width = -(-self.num_nodes // 8)
        padded = dense.new_zeros(self.num_nodes, 8 * self.width)
        padded[:, : self.num_nodes] = dense
        shifts = torch.arange(8, dtype=torch.uint8, device=dense.device)
        self.bits = (padded.view(self.num_nodes, self.width, 8).to(torch.uint8) << shifts).sum(
            -1, dtype=torch.uint8)

    def without(self, keys: Tensor) -> "BitRows":
        r"""These rows without the entries ``keys`` (:math:`u N + v`,
        distinct, every one an entry of the rows): the bits cleared in a
        copy."""
        rows = BitRows.__new__(BitRows)
        rows.num_nodes, rows.width = self.num_nodes, self.width
        rows.bits = self.bits.clone()
        u, v = keys // self.num_nodes, keys % self.num_nodes
        bit = (1 << (v % 8)).to(torch.uint8)  # set, and distinct within a byte: subtracted
        rows.bits.view(-1).index_put_((u * self.width + v // 8,), -bit, accumulate=True)
        return rows

    def common(self, pairs: Tensor) -> Tensor:
        r"""The packed bytes of :math:`\mathbf{A}_i \odot \mathbf{A}_j`,
        shape ``[M, W]``."""
        return self.bits.index_select(0, pairs[:, 0]) & self.bits.index_select(0, pairs[:, 1])

    def unpack(self, packed: Tensor, dtype: torch.dtype) -> Tensor:
        """Packed rows as 0/1 entries of ``dtype``, shape ``[M, 8W]`` (the
        columns past :math:`N` are 0)."""
        table = _unpack_table(dtype, packed.device)
        return table.index_select(0, packed.view(-1).int()).view(packed.size(0), -1)



def _unpack_table(dtype: torch.dtype, device: torch.device) -> Tensor:
    """Row ``b``: the 8 bits of byte ``b`` as 0/1 of ``dtype``."""
    byte = torch.arange(256, device=device).unsqueeze(1)
    return ((byte >> torch.arange(8, device=device)) & 1).to(dtype)


def chunk_bytes(device: torch.device) -> int:
    """Bytes of rows made at a time: :data:`GPU_CHUNK_BYTES` on a GPU, the
    last-level cache over :data:`CACHE_SHARE` on CPUs (32 MiB assumed where
    the cache's size cannot be read), at most :data:`CPU_CHUNK_BYTES`."""
    if device.type == "cuda":
        return GPU_CHUNK_BYTES
    return min(last_level_cache_bytes() // CACHE_SHARE, CPU_CHUNK_BYTES)


SIZE_UNITS = {"K": 2**10, "M": 2**20, "G": 2**30}


@functools.cache
def last_level_cache_bytes(cpu: Path = Path("/sys/devices/system/cpu/cpu0/cache")) -> int:
    """The size of the CPU's largest cache, as Linux reports it (``32768K``),
    else 32 MiB; read once per process, not at every product."""
    sizes = []
    for entry in cpu.glob("index*/size"):
        text = entry.read_text().strip().upper()
        if text[:-1].isdigit() and text[-1] in SIZE_UNITS:
            sizes.append(int(text[:-1]) * SIZE_UNITS[text[-1]])
    return max(sizes, default=32 * 2**20)


def mask_budget(device: torch.device) -> int:
    """Bytes the rows of one step may hold: :data:`MASK_MEMORY_SHARE` of
    :func:`free_memory`."""
    return int(MASK_MEMORY_SHARE * free_memory(device))


def free_memory(device: torch.device) -> int:
    """Free bytes of ``device``: its free memory on a GPU, the free physical
    memory on CPUs."""
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def dense_common_neighbor_sum(rows: BitRows, h: Tensor, pairs: Tensor,
                              dtype: torch.dtype = torch.float32) -> tuple[Tensor, Tensor]:
    r""":math:`(\mathbf{A}_i \odot \mathbf{A}_j) \mathbf{H}` of every pair,
    fp32, and :math:`n_{ij} = |N(i) \cap N(j)|`, the products in ``dtype``
    (bfloat16 under bfloat16 autocast: the 0/1 rows are exact). The counts
    come out of the same product, as a column of ones appended to
    :math:`\mathbf{H}` (rounded as the sums are in bfloat16). In fp32 on a
    CPU with int8 matrix units (:func:`int8_products`) the products are
    int8 ones on :math:`\mathbf{H}`'s digits
    (:class:`~plnlp_core.nn.edge_level.fixed_point.FixedPoint`), more exact
    than fp32's.

    Shapes:
        - **input:** :math:`\mathbf{H}` :math:`(N, C)`, pairs :math:`(M, 2)`
        - **output:** :math:`(M, C)`, :math:`(M)`
    """
    count = torch.empty(pairs.size(0), dtype=torch.long, device=pairs.device)
    if dtype == torch.float32 and int8_products(h.device):
        return _Int8CommonNeighborProduct.apply(h, rows, pairs, count), count
    total = _CommonNeighborProduct.apply(h, rows, pairs, dtype, count)
    return total, count


class _CommonNeighborProduct(torch.autograd.Function):
    """Forward :math:`\\mathbf{M} \\mathbf{H}` chunk by chunk; backward
    :math:`\\mathbf{M}^\\top \\mathbf{G}` from the kept chunks of
    :math:`\\mathbf{M}` when they fit :func:`mask_budget`, else from chunks
    made again."""

    @staticmethod
    def forward(ctx: torch.autograd.function.FunctionCtx, h: Tensor, rows: BitRows,
                pairs: Tensor, dtype: torch.dtype, count: Tensor) -> Tensor:
        row_bytes = 8 * rows.width * torch.finfo(dtype).bits // 8
        budget = mask_budget(h.device)
        keep = ctx.needs_input_grad[0] and pairs.size(0) * row_bytes <= budget
        step = max(min(chunk_bytes(h.device), budget) // row_bytes, 1)
        weights = _padded(h, rows, dtype)
        out = h.new_empty(pairs.size(0), h.size(1), dtype=torch.float32)
        kept = []
        for start in range(0, pairs.size(0), step):
            mask = rows.unpack(rows.common(pairs[start:start + step]), dtype)
            product = mask @ weights
            out[start:start + step] = product[:, :-1]
            count[start:start + step] = product[:, -1].round().long()
            if keep:
                kept.append(mask)
        ctx.rows, ctx.dtype, ctx.step, ctx.kept = rows, dtype, step, kept
        ctx.save_for_backward(pairs)
        return out

    @staticmethod
    def backward(ctx: torch.autograd.function.FunctionCtx,
                 grad: Tensor) -> tuple[Tensor, None, None, None, None]:
        pairs, = ctx.saved_tensors
        rows, step = ctx.rows, ctx.step
        grad_h = grad.new_zeros(8 * rows.width, grad.size(1), dtype=torch.float32)
        for index, start in enumerate(range(0, pairs.size(0), step)):
            mask = ctx.kept[index] if ctx.kept else rows.unpack(
                rows.common(pairs[start:start + step]), ctx.dtype)
            grad_h += mask.t() @ grad[start:start + step].to(ctx.dtype)
        ctx.kept = []
        return grad_h[: rows.num_nodes], None, None, None, None


def _padded(h: Tensor, rows: BitRows, dtype: torch.dtype) -> Tensor:
    """``[H | 1]`` in ``dtype``, with zero rows up to :math:`8W`."""
    weights = h.new_zeros(8 * rows.width, h.size(1) + 1, dtype=dtype)
    weights[: rows.num_nodes, :-1] = h
    weights[: rows.num_nodes, -1] = 1
    return weights


class Int8Rows:
    r"""Chunks of rows :math:`\mathbf{A}_i \odot \mathbf{A}_j` as int8 0/1
    entries, each made in the same buffers: fresh ones cost a page fault
    every 4 KiB, which made the table lookup three times slower."""

    def __init__(self, rows: BitRows, size: int) -> None:
        self.rows, width, device = rows, rows.width, rows.bits.device
        self.left = torch.empty(size, width, dtype=torch.uint8, device=device)
        self.right = torch.empty_like(self.left)
        self.index = torch.empty(size * width, dtype=torch.int32, device=device)
        self.entries = torch.empty(size * width, dtype=torch.int64, device=device)
        self.table = _unpack_table(torch.int8, device).view(torch.int64).view(-1)

    def __call__(self, pairs: Tensor) -> Tensor:
        """The rows of ``pairs`` (at most the buffers' size), int8,
        ``[M, 8W]``: valid until the next call."""
        m, width = pairs.size(0), self.rows.width
        left, right = self.left[:m], self.right[:m]
        torch.index_select(self.rows.bits, 0, pairs[:, 0], out=left)
        torch.index_select(self.rows.bits, 0, pairs[:, 1], out=right)
        torch.bitwise_and(left, right, out=left)
        index, entries = self.index[: m * width], self.entries[: m * width]
        index.copy_(left.view(-1))
        torch.index_select(self.table, 0, index, out=entries)  # 8 entries a lookup
        return entries.view(torch.int8).view(m, 8 * width)


class _Int8CommonNeighborProduct(torch.autograd.Function):
    r"""Forward :math:`\mathbf{M} \mathbf{H}` and backward
    :math:`\mathbf{M}^\top \mathbf{G}` as int8 products on the digits of
    :math:`[\mathbf{H} | 1]` and :math:`\mathbf{G}`, chunk by chunk, the
    rows made again in the backward."""

    @staticmethod
    def forward(ctx: torch.autograd.function.FunctionCtx, h: Tensor, rows: BitRows,
                pairs: Tensor, count: Tensor) -> Tensor:
        weights = FixedPoint(_padded(h, rows, torch.float32))
        step = max(chunk_bytes(h.device) // (8 * rows.width), 1)
        chunk_rows = Int8Rows(rows, min(step, pairs.size(0)))
        sums = torch.empty(chunk_rows.left.size(0), weights.digits.size(1), dtype=torch.int32)
        out = h.new_empty(pairs.size(0), h.size(1), dtype=torch.float32)
        for start in range(0, pairs.size(0), step):
            chunk = pairs[start:start + step]
            part = sums[: chunk.size(0)]
            product = weights.value(weights.product(chunk_rows(chunk), out=part))
            out[start:start + step] = product[:, :-1]
            count[start:start + step] = product[:, -1].round().long()
        ctx.rows, ctx.step, ctx.chunk_rows = rows, step, chunk_rows
        ctx.save_for_backward(pairs)
        return out

    @staticmethod
    def backward(ctx: torch.autograd.function.FunctionCtx,
                 grad: Tensor) -> tuple[Tensor, None, None, None]:
        pairs, = ctx.saved_tensors
        rows, step, chunk_rows = ctx.rows, ctx.step, ctx.chunk_rows
        grad_digits = FixedPoint(grad.float())
        # a digit sum is at most 128 per pair: int32 holds 2^24 pairs
        total_dtype = torch.int32 if pairs.size(0) < 2**24 else torch.int64
        total = torch.zeros(8 * rows.width, grad_digits.digits.size(1), dtype=total_dtype)
        part = torch.empty(total.shape, dtype=torch.int32)
        for start in range(0, pairs.size(0), step):
            chunk = pairs[start:start + step]
            total += grad_digits.product(chunk_rows(chunk).t(), slice(start, start + step),
                                         out=part)
        ctx.chunk_rows = None
        return grad_digits.value(total)[: rows.num_nodes], None, None, None
