import torch
from torch import Tensor, nn

from plnlp_core.nn.edge_level.common_neighbors import (
    AdjacencyLookup,
    common_neighbor_sum,
    path3_counts,
)
from plnlp_core.nn.predictors.mlp import MLP
from plnlp_core.registry import Registry

EDGE_PREDICTORS: Registry[type[nn.Module]] = Registry("edge-level predictor")
"""``predictor`` at ``encoder_level: edge``: ``"mlp"`` (:class:`EdgeLevelPredictor`)
or ``"ncn"`` (:class:`plnlp_core.nn.edge_level.ncn_predictor.NCNPredictor`)."""


@EDGE_PREDICTORS.register("mlp")
class EdgeLevelPredictor(nn.Module):
    r"""The edge-level link predictor: an MLP over the pair's node vectors,
    its common neighbours' vectors (the NCN idea, Wang, Yang and Zhang
    2023, "Neural Common Neighbor") and a few counts of its joint
    neighborhood,

    .. math::
        s_{ij} = \mathrm{MLP}\Big(\mathbf{h}_i \odot \mathbf{h}_j
        \,\Big\|\, \sum_{k \in N(i) \cap N(j)} \mathbf{h}_k
        \,\Big\|\, \boldsymbol{\phi}_{ij}\Big), \qquad
        \boldsymbol{\phi}_{ij} = \big(\ln(1 + n_{ij}),\ \ln(1 + p_{ij}),\
        \ln(1 + d_i) + \ln(1 + d_j),\ |\ln(1 + d_i) - \ln(1 + d_j)|\big),

    where :math:`n_{ij} = |N(i) \cap N(j)|` and :math:`d` are degrees in
    the graph the pair is scored on, and :math:`p_{ij}` counts the paths of
    length 3 between :math:`i` and :math:`j` (only with ``path_length=3``;
    where common neighbours are rare, as in power grids, they carry the
    structure) in the input graph less the edge :math:`(i, j)` itself, as
    SEAL removes a training link from its own subgraph and no other: a
    training positive counts its paths as a held-out link of evaluation
    does, whatever else its step removes, and every count is one read of
    the input graph's :math:`A^2` table
    (:func:`~plnlp_core.nn.edge_level.common_neighbors.path3_counts`).
    ``counts=False`` leaves :math:`\boldsymbol{\phi}` out (it hands the
    MLP the common-neighbour heuristic itself). Every term is symmetric in
    :math:`i, j`.

    Args:
        in_channels (int): Size of the node vectors :math:`C`.
        hidden_channels (int): Size of the hidden layers.
        num_layers (int): Number of linear layers, the output layer included.
        dropout (float): Dropout between layers. (default: ``0.0``)
        path_length (int): ``2`` (common neighbours) or ``3`` (also paths
            of length 3). (default: ``2``)
        counts (bool): Feed :math:`\boldsymbol{\phi}`. (default: ``True``)

    Shapes:
        - **input:** node vectors :math:`(N, C)`, pairs :math:`(M, 2)`, the
          graph's :class:`AdjacencyLookup`
        - **output:** :math:`(M)`
    """

    symmetric = True

    def __init__(self, in_channels: int, hidden_channels: int, num_layers: int,
                 dropout: float = 0.0, path_length: int = 2, counts: bool = True) -> None:
        super().__init__()
        self.in_channels = in_channels
        self.path_length = path_length
        self.num_counts = (4 if path_length == 3 else 3) if counts else 0
        self.mlp = MLP(2 * in_channels + self.num_counts, hidden_channels, 1, num_layers, dropout)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        self.mlp.reset_parameters()

    def counts(self, lookup: AdjacencyLookup, pairs: Tensor, common: Tensor) -> Tensor:
        r""":math:`\boldsymbol{\phi}`, shape ``[M, 3]`` or ``[M, 4]``."""
        log_degree = torch.log1p(lookup.degree.float())
        di, dj = log_degree[pairs[:, 0]], log_degree[pairs[:, 1]]
        terms = [torch.log1p(common.float())]
        if self.path_length == 3:
            terms.append(torch.log1p(path3_counts(lookup.root or lookup, pairs,
                                                     edges_kept=self.training)))
        terms += [di + dj, (di - dj).abs()]
        return torch.stack(terms, dim=1)

    def forward(self, h: Tensor, pairs: Tensor, lookup: AdjacencyLookup) -> Tensor:
        aggregate, common = common_neighbor_sum(lookup, h, pairs)
        hadamard = h.index_select(0, pairs[:, 0]) * h.index_select(0, pairs[:, 1])
        features = [hadamard, aggregate.to(hadamard.dtype)]
        if self.num_counts:
            features.append(self.counts(lookup, pairs, common).to(hadamard.dtype))
        return self.mlp(torch.cat(features, dim=1)).squeeze(-1)

    def __repr__(self) -> str:
        return (f"EdgeLevelPredictor({self.mlp}, path_length={self.path_length}, "
                f"counts={self.num_counts > 0})")


