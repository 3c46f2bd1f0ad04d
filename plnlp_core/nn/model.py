from collections.abc import Callable

import torch
from torch import Tensor, nn

from plnlp_core.nn.edge_level.common_neighbors import AdjacencyLookup
from plnlp_core.nn.encoders.encoder import GNNEncoder
from plnlp_core.nn.node_input import NodeInput
from plnlp_core.nn.predictors.registry import PREDICTORS
from plnlp_core.registry import Registry
from plnlp_core.sampling.neighbors import SampledSubgraph

ENCODER_LEVELS: Registry[type["PLNLPModel"]] = Registry("encoder level")
"""``encoder_level``: ``"node"`` (:class:`PLNLPModel`) or ``"edge"``
(:class:`plnlp_core.nn.edge_level.EdgeLevelModel`)."""


def unwrap(model: nn.Module) -> nn.Module:
    """The model a :class:`~torch.nn.parallel.DistributedDataParallel`
    wrapper holds, or ``model`` itself when it is not wrapped."""
    return model.module if hasattr(model, "module") else model


@ENCODER_LEVELS.register("node")
class PLNLPModel(nn.Module):
    r"""A neural link predictor (paper §3, Eq. 3): a neighborhood encoder
    over the node input and a link predictor over pairs of encoded nodes,

    .. math::
        s_{ij} = f\left(\mathrm{ENC}(v_i), \mathrm{ENC}(v_j)\right).

    With ``target_edge_removal`` each training step encodes on the input
    graph without the step's positive edges,
    :math:`\tilde{A} = A - \sum_{(i, j) \in P} (e_i e_j^\top + e_j e_i^\top)`,
    so that no positive is scored from node vectors that read its own edge,
    as no validation or test edge is (Refined-GAE's ``--maskinput``, NCN's
    target-link removal); the pairs of a step that are edges of the graph
    are exactly its positives, as negatives never are. A step whose
    positives are more than :attr:`MAX_REMOVED` of the graph's edges is
    encoded in groups (:meth:`removal_groups`). Evaluation encodes on
    :math:`A`.

    Args:
        node_input (NodeInput): Builds :math:`\mathbf{h}^{(0)}`.
        encoder (GNNEncoder): The neighborhood encoder.
        predictor (str or nn.Module): A name in :data:`PREDICTORS`, built
            with the settings below, or a predictor of one's own, built.
        predictor_hidden (int): Hidden size of MLP predictors.
        predictor_layers (int): Layers of MLP predictors.
        predictor_dropout (float): Dropout of MLP predictors.
        predictor_residual (bool): MLP predictors add their input to each
            hidden layer. (default: ``False``)
        target_edge_removal (bool): Encode each training step on the graph
            without its positive edges. (default: ``False``)

    Shapes:
        - **input:** node features :math:`(N, F)` or ``None``, adjacency
          :math:`(N, N)`, pairs :math:`(M, 2)`
        - **output:** scores :math:`(M)`
    """

    MAX_REMOVED = 0.15
    """The largest fraction of the graph's edges one training graph lacks:
    about what evaluation's graph lacks (the held-out edges)."""

    def __init__(
        self, node_input: NodeInput, encoder: GNNEncoder, predictor: str | nn.Module,
        predictor_hidden: int, predictor_layers: int, predictor_dropout: float,
        predictor_residual: bool = False, target_edge_removal: bool = False,
    ) -> None:
        super().__init__()
        self.node_input = node_input
        self.encoder = encoder
        self.target_edge_removal = target_edge_removal
        if target_edge_removal:
            encoder.stop_caching()  # the graph changes at every step
        self._lookup: AdjacencyLookup | None = None
        self.predictor = predictor if isinstance(predictor, nn.Module) else PREDICTORS.get(
            predictor)(encoder.out_channels, hidden_channels=predictor_hidden,
                       num_layers=predictor_layers, dropout=predictor_dropout,
                       residual=predictor_residual)

    def encode(self, x: Tensor | None, adj: Tensor) -> Tensor:
        """Node vectors :math:`\\mathbf{h}`, shape ``[N, C]``."""
        return self.encoder(self.node_input(x), adj)

    def score(self, h: Tensor, pairs: Tensor, adj: Tensor | None = None,
              repeated: bool = False) -> Tensor:
        """Scores of ``pairs`` (shape ``[M, 2]``) from node vectors ``h``
        (``adj``, the graph ``h`` was encoded on, is read by the edge level
        only; so is ``repeated``: the same pairs come back on the same
        graph, as evaluation's do every epoch).
        ``index_select``, whose backward is one ``index_add_``, gathers the
        rows: ``h[index]``'s backward, an accumulating ``index_put_``, takes
        eight times as long on CPU."""
        return self.predictor(h.index_select(0, pairs[:, 0]), h.index_select(0, pairs[:, 1]))

    def encode_sampled(self, x: Tensor | None, subgraph: SampledSubgraph) -> Tensor:
        """The vectors of ``subgraph``'s seeds, shape ``[num_seeds, C]``,
        encoded on the sampled neighbourhood alone (its nodes' input rows,
        its edges)."""
        h = self.encoder(self.node_input(x, subgraph.nodes), subgraph)
        return h[:subgraph.num_seeds]

    def forward(self, x: Tensor | None, adj: Tensor | SampledSubgraph, pairs: Tensor) -> Tensor:
        """Scores ``pairs``; in training with ``target_edge_removal``, each
        group of them on the graph without its positive edges. Given a
        :class:`SampledSubgraph` for ``adj``, ``pairs`` are its seeds'
        local ids, encoded on it (neighbour-sampled training)."""
        if isinstance(adj, SampledSubgraph):
            return self.score(self.encode_sampled(x, adj), pairs)
        if not (self.training and self.target_edge_removal):
            return self.score(self.encode(x, adj), pairs)
        return self.score_without_targets(
            self.lookup(adj), pairs, lambda reduced, group: self.score(
                self.encode(x, reduced.adj), group))

    def lookup(self, adj: Tensor) -> AdjacencyLookup:
        """The :class:`AdjacencyLookup` of the input graph ``adj``, kept while
        the same tensor comes back (every step and evaluation chunk)."""
        if self._lookup is None or self._lookup.adj is not adj:
            self._lookup = AdjacencyLookup(adj)
        return self._lookup

    def score_without_targets(
        self, lookup: AdjacencyLookup, pairs: Tensor,
        score_group: Callable[[AdjacencyLookup, Tensor], Tensor],
    ) -> Tensor:
        """Scores of ``pairs``, each group of :meth:`removal_groups` scored by
        ``score_group(reduced, group_pairs)`` on the graph of ``lookup``
        without the group's edges (``reduced``, its lookup), back in the
        order of ``pairs``."""
        groups = self.removal_groups(lookup, pairs)
        scores = [score_group(lookup.without(pairs[index]), pairs[index]) for index in groups]
        if len(groups) == 1:
            return scores[0]
        return torch.cat(scores)[torch.argsort(torch.cat(groups))]

    def removal_groups(self, lookup: AdjacencyLookup, pairs: Tensor) -> list[Tensor]:
        r"""Rows of ``pairs`` in groups whose positive edges are at most
        :attr:`MAX_REMOVED` of the graph's edges: one group of all rows
        unless a step ranks more (full-batch training on a small graph).
        Each group is encoded on its own graph, so that training never
        sees a graph much sparser than evaluation's, which lacks only the
        held-out edges; each pair is still scored once."""
        rows = torch.arange(pairs.size(0), device=pairs.device)
        is_edge = lookup.contains(pairs[:, 0], pairs[:, 1])
        num_edges = lookup.keys.numel() // 2
        count = -(-int(is_edge.sum()) // max(int(self.MAX_REMOVED * num_edges), 1))
        if count <= 1:
            return [rows]
        return [torch.cat(parts) for parts in zip(rows[is_edge].tensor_split(count),
                                                  rows[~is_edge].tensor_split(count),
                                                  strict=True)]

    def clip_gradients(self, max_norm: float) -> None:
        r"""Clips the encoder's and the predictor's gradients, each to an L2
        norm of at most ``max_norm``,

        .. math::
            \mathbf{g} \leftarrow \mathbf{g} \cdot
            \min\left(1, \frac{c}{\lVert \mathbf{g} \rVert_2}\right),

        and leaves the node embedding's unclipped, as the authors do."""
        for module in (self.encoder, self.predictor):
            parameters = list(module.parameters())
            if parameters:  # the dot predictor has none
                nn.utils.clip_grad_norm_(parameters, max_norm)
