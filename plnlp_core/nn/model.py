from torch import Tensor, nn

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

    :class:`~plnlp_core.nn.edge_level.target_removal.NodeLevelWithoutTargets`
    trains it on the graph without each step's positive edges
    (``node_target_edge_removal``).

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

    Shapes:
        - **input:** node features :math:`(N, F)` or ``None``, adjacency
          :math:`(N, N)`, pairs :math:`(M, 2)`
        - **output:** scores :math:`(M)`
    """

    def __init__(
        self, node_input: NodeInput, encoder: GNNEncoder, predictor: str | nn.Module,
        predictor_hidden: int, predictor_layers: int, predictor_dropout: float,
        predictor_residual: bool = False,
    ) -> None:
        super().__init__()
        self.node_input = node_input
        self.encoder = encoder
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
        """Scores ``pairs``. Given a :class:`SampledSubgraph` for ``adj``,
        ``pairs`` are its seeds' local ids, encoded on it (neighbour-sampled
        training)."""
        if isinstance(adj, SampledSubgraph):
            return self.score(self.encode_sampled(x, adj), pairs)
        return self.score(self.encode(x, adj), pairs)

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
