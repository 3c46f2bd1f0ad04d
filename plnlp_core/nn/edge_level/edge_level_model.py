from torch import Tensor, nn

from plnlp_core.choices import TARGET_REMOVAL_LIMIT
from plnlp_core.nn.edge_level.common_neighbors import dropped_edges
from plnlp_core.nn.edge_level.target_removal import TargetEdgeRemoval
from plnlp_core.nn.encoders.encoder import GNNEncoder
from plnlp_core.nn.model import ENCODER_LEVELS, PLNLPModel
from plnlp_core.nn.node_input import NodeInput


@ENCODER_LEVELS.register("edge")
class EdgeLevelModel(TargetEdgeRemoval, PLNLPModel):
    r"""A link predictor with an edge-level neighborhood encoder (the paper's
    ENE, left to future work in §4.1; here the NCN form): the node encoder's
    vectors of :math:`i` and :math:`j` and of their common neighbours, and
    counts of their joint neighborhood, fed to an edge-level predictor
    (:class:`EdgeLevelPredictor` or NCN's own, :class:`NCNPredictor`),

    .. math::
        s_{ij} = \mathrm{MLP}\Big(\mathbf{h}_i \odot \mathbf{h}_j \,\Big\|\,
        \sum_{k \in N_{\tilde{A}}(i) \cap N_{\tilde{A}}(j)} \mathbf{h}_k
        \,\Big\|\, \boldsymbol{\phi}_{ij}(\tilde{A})\Big), \qquad
        \mathbf{h} = \mathrm{ENC}(\tilde{A}).

    In training, :math:`\tilde{A}` is the input graph without the batch's
    positive edges (NCN's target-link removal), both for message passing and
    for the pair terms, so that no pair sees the edge it is ranked for: the
    pairs of a step that are edges of the graph are exactly its positive
    edges, as negatives never are. A step whose positives are more than
    ``removal_limit`` of the graph's edges is scored in groups, each on the
    graph without its own positives (:meth:`TargetEdgeRemoval.removal_groups`).
    In evaluation :math:`\tilde{A} = A`,
    the whole input graph. Every distinct pair is still scored once. With
    ``target_edge_removal=False`` training scores every pair on :math:`A`
    too (NCN's ``NoTLR`` ablation).

    With ``edge_dropout`` :math:`p > 0`, each training step first drops a
    fraction :math:`p` of the input graph's undirected edges
    (:func:`~plnlp_core.nn.edge_level.common_neighbors.drop_edges`), so that
    :math:`\tilde{A} = A - \sum_{(i, j) \in D \cup P}
    (e_i e_j^\top + e_j e_i^\top)` with :math:`D` drawn anew each step and
    :math:`P` the step's positive edges. NCN drops each direction of each
    edge by itself, anew in every encoder layer and in the predictor, and
    scales the kept entries by :math:`1/(1-p)`; here one symmetric draw
    serves the step's encoder and pair terms alike, unscaled (the common
    neighbours are sets). Evaluation never drops edges.

    A GCN encoder's normalised adjacency is not cached here: the graph
    changes at every step.

    Args:
        node_input (NodeInput): Builds :math:`\mathbf{h}^{(0)}`.
        encoder (GNNEncoder): The node-level encoder.
        predictor (nn.Module): An edge-level predictor, called with the node
            vectors, the pairs and the graph's :class:`AdjacencyLookup`.
        target_edge_removal (bool): Score training pairs on the graph
            without the step's positive edges. (default: ``True``)
        edge_dropout (float): The fraction :math:`p` of undirected edges
            dropped at each training step. (default: ``0.0``)
        removal_limit (float): The largest fraction of the graph's edges
            one group's graph lacks; ``1.0``: a step is one group.
            (default: :data:`~plnlp_core.choices.TARGET_REMOVAL_LIMIT`)

    Shapes:
        - **input:** node features :math:`(N, F)` or ``None``, sparse CSR
          adjacency :math:`(N, N)`, pairs :math:`(M, 2)`
        - **output:** scores :math:`(M)`
    """

    def __init__(self, node_input: NodeInput, encoder: GNNEncoder, predictor: nn.Module,
                 target_edge_removal: bool = True, edge_dropout: float = 0.0,
                 removal_limit: float = TARGET_REMOVAL_LIMIT) -> None:
        nn.Module.__init__(self)  # not PLNLPModel's: the predictor here is not PREDICTORS'
        self.node_input = node_input
        self.encoder = encoder
        self.target_edge_removal = target_edge_removal
        self.edge_dropout = edge_dropout
        self.removal_limit = removal_limit
        if target_edge_removal or edge_dropout > 0:
            encoder.stop_caching()
        self.predictor = predictor

    def score(self, h: Tensor, pairs: Tensor, adj: Tensor | None = None,
              repeated: bool = False) -> Tensor:
        """Scores of ``pairs`` from node vectors ``h`` encoded on ``adj``;
        with ``repeated`` (evaluation's pairs, scored again every epoch) the
        graph's memo keeps what their pair terms need but ``h``
        (:class:`~plnlp_core.nn.edge_level.pair_memo.PairMemo`)."""
        if adj is None:
            raise TypeError("the edge level scores pairs on a graph: pass adj")
        lookup = self.lookup(adj)
        if repeated:
            lookup.memo.remember(pairs)
        return self.predictor(h, pairs, lookup)

    def forward(self, x: Tensor | None, adj: Tensor, pairs: Tensor) -> Tensor:
        """Scores ``pairs``; in training, on the graph less its dropped
        edges, each group of them (see :meth:`removal_groups`) also without
        its positive edges."""
        lookup = self.lookup(adj)
        if self.training and self.edge_dropout > 0:
            lookup = lookup.without(dropped_edges(lookup, self.edge_dropout))
        if not (self.training and self.target_edge_removal):
            return self.predictor(self.encode(x, lookup.adj), pairs, lookup)
        return self.score_without_targets(lookup, pairs, lambda reduced, group: self.predictor(
            self.encode(x, reduced.adj), group, reduced))
