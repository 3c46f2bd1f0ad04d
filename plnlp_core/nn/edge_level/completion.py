r"""Common-neighbour completion (Wang, Yang and Zhang 2023, NCNC: "Neural
Common Neighbor with Completion for Link Prediction").

An observed graph misses links, and so a pair's common neighbours miss
some of theirs: a neighbour :math:`k` of :math:`i` that is no neighbour of
:math:`j` may be one the graph has not seen. NCNC adds each such
:math:`k`, weighted by how likely the model itself finds the link
:math:`(j, k)`, to the common neighbours' sum,

.. math::
    \mathbf{c}_{ij} = \sum_{k \in N(i) \cap N(j)} \mathbf{x}'_k
    + \sum_{k \in N(i) \setminus N(j)} w_{jk}\, \mathbf{x}'_k
    + \sum_{k \in N(j) \setminus N(i)} w_{ik}\, \mathbf{x}'_k,
    \qquad
    w = \frac{\alpha\, \pi\, p}{\pi\, p + 1 - p}, \quad
    p = \sigma\big(a\,(s - b)\big),

where :math:`s` is the plain NCN score of the link (no completion, no
gradient), :math:`a` and :math:`b` rescale it (``scale``, ``offset``),
:math:`\pi` is the prior odds of a missing link (``threshold``: NCNC's
``pt``) and :math:`\alpha` bounds the weight. In training each endpoint
keeps at most :data:`TRAIN_NEIGHBOURS` of its one-sided neighbours (drawn
at random), in evaluation :data:`EVAL_NEIGHBOURS` (NCNC's ``trainresdeg``,
``testresdeg``), so that a step costs a few more pairs scored on sparse
graphs, where completion helps.
"""
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

TRAIN_NEIGHBOURS = 8
EVAL_NEIGHBOURS = 128


@dataclass(frozen=True)
class Completion:
    """The weight of a completed neighbour from its link's score (see the module).

    Attributes:
        scale (float): :math:`a`.
        offset (float): :math:`b`.
        threshold (float): :math:`\\pi`.
        alpha (float): :math:`\\alpha`.
    """

    scale: float = 4.3
    offset: float = 2.8
    threshold: float = 0.75
    alpha: float = 1.0

    def weight(self, scores: Tensor) -> Tensor:
        """:math:`w` of each link of ``scores``."""
        p = torch.sigmoid(self.scale * (scores - self.offset))
        return self.alpha * self.threshold * p / (self.threshold * p + 1 - p)


def one_sided_neighbours(crow: Tensor, col: Tensor, contains: Callable[[Tensor, Tensor], Tensor],
                         pairs: Tensor, limit: int, drawn: bool) -> tuple[Tensor, Tensor]:
    r"""For each pair :math:`(i, j)` of ``pairs`` (``[M, 2]``), the nodes of
    :math:`N(i) \setminus (N(j) \cup \{j\})`, about ``limit`` of them at
    most, as ``(pair index, node)``: where ``drawn``, each neighbour kept
    with probability :math:`\min(1, \mathrm{limit} / d_i)` (training), else
    the first ``limit`` of the row.

    Args:
        crow (Tensor): The CSR's row offsets.
        col (Tensor): The CSR's columns.
        contains (callable): ``contains(u, v)``, which :math:`(u_t, v_t)` are edges.
        pairs (Tensor): ``[M, 2]``.
        limit (int): The most neighbours kept of each :math:`i`.
        drawn (bool): Keep a random share, not the first.
    """
    i, j = pairs[:, 0], pairs[:, 1]
    start, degree = crow[i], crow[i + 1] - crow[i]
    owner = torch.repeat_interleave(torch.arange(pairs.size(0), device=pairs.device), degree)
    offset = torch.arange(owner.numel(), device=pairs.device) \
        - torch.repeat_interleave(degree.cumsum(0) - degree, degree)
    if drawn:
        share = (limit / degree.clamp(min=1).to(torch.float32)).clamp(max=1.0)
        kept = torch.rand(owner.numel(), device=pairs.device) < share[owner]
    else:
        kept = offset < limit
    owner, node = owner[kept], col[start[owner[kept]] + offset[kept]]
    other = j[owner]
    one_sided = (node != other) & ~contains(other, node)
    return owner[one_sided], node[one_sided]
