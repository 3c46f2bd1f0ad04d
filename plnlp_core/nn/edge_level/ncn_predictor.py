import torch
from torch import Tensor, nn

from plnlp_core.nn.edge_level.common_neighbors import AdjacencyLookup, common_neighbor_sum
from plnlp_core.nn.edge_level.completion import (
    EVAL_NEIGHBOURS,
    TRAIN_NEIGHBOURS,
    Completion,
    one_sided_neighbours,
)
from plnlp_core.nn.edge_level.edge_predictor import EDGE_PREDICTORS
from plnlp_core.nn.relu_dropout import ReLUDropout


def _layers(*modules: nn.Module | None) -> nn.Sequential:
    return nn.Sequential(*(m for m in modules if m is not None))


@EDGE_PREDICTORS.register("ncn")
class NCNPredictor(nn.Module):
    r"""The Neural Common Neighbor predictor (Wang, Yang and Zhang 2023,
    "Neural Common Neighbor with Completion for Link Prediction"; the
    authors' ``CNLinkPredictor`` with ``--lnnn``),

    .. math::
        s_{ij} = \mathrm{lin}\Big(\beta \cdot \mathrm{cn}\Big(
        \sum_{k \in N(i) \cap N(j)} \mathbf{x}'_k\Big)
        + \mathrm{ij}\big(\mathbf{h}_i \odot \mathbf{h}_j\big)\Big), \qquad
        \mathbf{x}' = \mathbf{h} + \mathrm{xlin}(\mathbf{h}),

    with a learnable scalar :math:`\beta` and, writing :math:`L` for a
    linear layer, :math:`\mathrm{LN}` for LayerNorm and :math:`\sigma` for
    dropout then ReLU (one fused pass, :class:`ReLUDropout`),

    .. math::
        \mathrm{cn} = L \circ \sigma \circ \mathrm{LN} \circ L \circ
        \sigma \circ L, \quad
        \mathrm{ij} = L \circ \sigma \circ \mathrm{LN} \circ L, \quad
        \mathrm{lin} = L \circ \sigma \circ \mathrm{LN} \circ L, \quad
        \mathrm{xlin} = \sigma \circ \mathrm{LN} \circ L \circ \sigma
        \circ L.

    ``tail_activation`` drops the last :math:`L` of ``cn`` and ``ij``
    (they end in :math:`\sigma` then); ``two_layer_output`` puts one more
    :math:`\sigma \circ \mathrm{LN} \circ L` in ``lin``; without ``xlin``,
    :math:`\mathbf{x}' = \mathbf{h}`. With ``completion`` the sum also
    counts each one-sided neighbour, weighted by this predictor's own score
    of its missing link (NCNC, :mod:`~plnlp_core.nn.edge_level.completion`).
    Symmetric in :math:`i, j`.

    Args:
        in_channels (int): Size of the node vectors :math:`C`.
        hidden_channels (int): Size of every hidden layer.
        dropout (float): Dropout in every branch. (default: ``0.0``)
        xlin (bool): Use :math:`\mathrm{xlin}`. (default: ``False``)
        tail_activation (bool): See above. (default: ``False``)
        two_layer_output (bool): See above. (default: ``False``)
        beta (float): The initial :math:`\beta`. (default: ``1.0``)
        completion (Completion, optional): Complete the common neighbours.
            (default: ``None``: NCN's sum)

    Shapes:
        - **input:** node vectors :math:`(N, C)`, pairs :math:`(M, 2)`, the
          graph's :class:`AdjacencyLookup`
        - **output:** :math:`(M)`
    """

    symmetric = True

    def __init__(self, in_channels: int, hidden_channels: int, dropout: float = 0.0,
                 xlin: bool = False, tail_activation: bool = False,
                 two_layer_output: bool = False, beta: float = 1.0,
                 completion: Completion | None = None) -> None:
        super().__init__()
        self.completion = completion
        c, d, p = in_channels, hidden_channels, dropout
        self.initial_beta = beta
        self.beta = nn.Parameter(torch.empty(1))
        self.xlin = _layers(nn.Linear(c, d), ReLUDropout(p), nn.Linear(d, c),
                            nn.LayerNorm(c), ReLUDropout(p)) if xlin else None
        tail = None if tail_activation else nn.Linear(d, d)
        self.cn = _layers(nn.Linear(c, d), ReLUDropout(p), nn.Linear(d, d),
                          nn.LayerNorm(d), ReLUDropout(p), tail)
        tail = None if tail_activation else nn.Linear(d, d)
        self.ij = _layers(nn.Linear(c, d), nn.LayerNorm(d), ReLUDropout(p), tail)
        self.lin = _layers(*hidden_layer(d, p), *(hidden_layer(d, p) if two_layer_output else ()),
                           nn.Linear(d, 1))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.constant_(self.beta, self.initial_beta)
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.LayerNorm)):
                module.reset_parameters()

    def forward(self, h: Tensor, pairs: Tensor, lookup: AdjacencyLookup) -> Tensor:
        """Under bfloat16 autocast only the common-neighbour sum runs in
        bfloat16 (where an edge-level step spends its time); the layers stay
        fp32, as with them in bfloat16 training on ogbl-ddi diverged after 5
        to 7 epochs in each of three seeds, and with them in fp32 it did not."""
        return self._score(h, pairs, lookup, self.completion)

    def _score(self, h: Tensor, pairs: Tensor, lookup: AdjacencyLookup,
               completion: Completion | None) -> Tensor:
        with torch.autocast(h.device.type, enabled=False):
            h = h.float()
            hadamard = h.index_select(0, pairs[:, 0]) * h.index_select(0, pairs[:, 1])
        rows = None if self.xlin is None else self._common_input
        common, _ = common_neighbor_sum(lookup, h, pairs, rows=rows)
        with torch.autocast(h.device.type, enabled=False):
            common = common.float()
            if completion is not None:
                common = common + self._completed(h, pairs, lookup, completion)
            combined = self.cn(common) * self.beta + self.ij(hadamard)
            return self.lin(combined).squeeze(-1)

    def _completed(self, h: Tensor, pairs: Tensor, lookup: AdjacencyLookup,
                   completion: Completion) -> Tensor:
        """The one-sided neighbours' vectors of each pair, each weighted by
        :meth:`Completion.weight` of its link's score without completion."""
        limit = TRAIN_NEIGHBOURS if self.training else EVAL_NEIGHBOURS
        total = h.new_zeros(pairs.size(0), h.size(1))
        for ordered in (pairs, pairs.flip(1)):
            owner, node = one_sided_neighbours(lookup.crow, lookup.col, lookup.contains, ordered,
                                               limit, self.training)
            if owner.numel() == 0:
                continue
            with torch.no_grad():
                links = torch.stack([ordered[:, 1].index_select(0, owner), node], dim=1)
                weight = completion.weight(self._score(h, links, lookup, None))
            x = h.index_select(0, node)
            x = x if self.xlin is None else self._common_input(x)
            total = total.index_add(0, owner, weight.unsqueeze(1) * x)
        return total

    def _common_input(self, h: Tensor) -> Tensor:
        """:math:`\\mathbf{x}'` of the rows ``h``, which the common
        neighbours' sum reads (outside autocast: fp32): row-wise, so made for
        those rows alone."""
        return h + self.xlin(h)

    def __repr__(self) -> str:
        completion = "" if self.completion is None else f", completion={self.completion}"
        return (f"NCNPredictor(xlin={self.xlin is not None}, beta={float(self.beta):.3g}"
                f"{completion})")


def hidden_layer(channels: int, dropout: float) -> list[nn.Module]:
    r""":math:`\sigma \circ \mathrm{LN} \circ L`, ``channels`` to ``channels``."""
    return [nn.Linear(channels, channels), nn.LayerNorm(channels), ReLUDropout(dropout)]

