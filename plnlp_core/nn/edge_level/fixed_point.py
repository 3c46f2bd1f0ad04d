r"""Exact products of 0/1 matrices with real ones on a CPU's int8 matrix
units: each column :math:`c` of a real matrix :math:`\mathbf{X}` is written
in fixed point, :math:`z_{kc} = \mathrm{round}(2^{s_c} x_{kc})` with
:math:`|z| < 2^{30}`, in four signed base-256 digits,

.. math::
    z_{kc} = \sum_{d=0}^{3} 256^d D^{(d)}_{kc}, \quad
    D^{(d)} \in [-128, 128), \qquad
    (\mathbf{M} \mathbf{X})_{pc} \approx 2^{-s_c} \sum_{d=0}^{3} 256^d
    \big(\mathbf{M} \mathbf{D}^{(d)}\big)_{pc}.

For a 0/1 matrix :math:`\mathbf{M}` each :math:`\mathbf{M} \mathbf{D}^{(d)}`
is an integer product, exact in int32 (``torch._int_mm``, AMX on the CPUs
that have it), and the digit sums are combined exactly in fp64 and rounded
to fp32 once. An entry within a factor :math:`2^6` of its column's largest
is written exactly (fp32 has 24 significant bits), smaller ones to within
:math:`2^{-30}` of the largest; fp32's own product rounds at every addition.
On ogbl-ddi's common neighbours (20,000 pairs, 64 channels) the largest
error, relative to the column's largest sum, was 5.1e-8 forward and 5.2e-8
backward, fp32's 4.3e-7 and 9.5e-7.
"""
import sys

import torch
from torch import Tensor

DIGITS = 4
FIXED_POINT_BITS = 30
"""Bits of :math:`|z|`: four base-256 digits hold them with room for the
balancing below."""
BALANCE = 0x00808080
"""Adding 128 to each of the three low bytes of :math:`z`, then flipping
their top bits, leaves the bytes of :math:`z`'s signed digits: byte
:math:`v` becomes :math:`v - 128`, the carry it takes stays in the byte
above."""


def int8_products(device: torch.device) -> bool:
    """Whether 0/1 products run on int8 digits: on CPUs with AMX tiles,
    where the four int8 products took a quarter of the fp32 product's time
    on ogbl-ddi's rows (0.38 s against 1.6 s, forward and backward, 131,072
    pairs, one thread), and the int8 rows are a quarter of fp32's bytes.
    Elsewhere int8 products are not known to be faster (not measured)."""
    return device.type == "cpu" and torch.cpu._is_amx_tile_supported()


class FixedPoint:
    r"""A real matrix :math:`\mathbf{X}` ``[R, C]`` in int8 digits, for
    exact products :math:`\mathbf{M} \mathbf{X}` with 0/1 matrices.

    Args:
        x (Tensor): The matrix, fp32, shape ``[R, C]``.

    Attributes:
        digits (Tensor): int8, shape ``[R, 4C]``: digit :math:`d` of column
            :math:`c` at :math:`4c + d` (:math:`4c + 3 - d` on a big-endian
            machine), the bytes of :math:`z` balanced.
        scale (Tensor): :math:`2^{-s_c}`, fp64, shape ``[C]``.
    """

    def __init__(self, x: Tensor) -> None:
        self.channels = x.size(1)
        largest = x.abs().amax(0) if x.size(0) else x.new_zeros(x.size(1))
        _, exponent = torch.frexp(largest)  # largest < 2^exponent
        # 2^s finite in fp32: a column below 2^-96 gets steps of 2^-126
        shift = torch.where(largest > 0, FIXED_POINT_BITS - exponent, 0).clamp(max=126)
        # exact in fp32: a scaling by a power of two, then a rounding to an integer
        z = torch.round(x * torch.ldexp(torch.ones_like(largest), shift)).int()
        balanced = (z + BALANCE) ^ BALANCE
        self.digits = balanced.view(torch.int8).view(x.size(0), DIGITS * x.size(1))
        self.scale = torch.ldexp(torch.ones_like(largest, dtype=torch.float64), -shift)
        self.weights = torch.tensor([256.0**d for d in range(DIGITS)], dtype=torch.float64,
                                    device=x.device)
        if sys.byteorder == "big":
            self.weights = self.weights.flip(0)

    def product(self, mask: Tensor, rows: slice = slice(None),
                out: Tensor | None = None) -> Tensor:
        r"""The digit sums :math:`\mathbf{M} \mathbf{D}^{(d)}`, int32, shape
        ``[P, 4C]``, of an int8 0/1 ``mask`` ``[P, R']`` against the rows
        ``rows`` of :math:`\mathbf{X}` (all by default), into ``out``."""
        return torch._int_mm(mask, self.digits[rows], out=out)

    def value(self, sums: Tensor) -> Tensor:
        r""":math:`\mathbf{M} \mathbf{X}` in fp32, shape ``[P, C]``, from
        :meth:`product`'s digit sums (or their sum over chunks of rows)."""
        digit_sums = sums.view(sums.size(0), self.channels, DIGITS).double()
        return (digit_sums @ self.weights * self.scale).float()
