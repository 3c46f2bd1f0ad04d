import torch
from torch import Tensor, nn

from plnlp_core.errors import PLNLPError
from plnlp_core.nn.input_projection import InputProjection


class NodeInput(nn.Module):
    r"""The encoder's input (paper §4.1): a trainable embedding
    :math:`\mathbf{e}_i`, the node features :math:`\mathbf{x}_i`, or both
    concatenated,

    .. math::
        \mathbf{h}^{(0)}_i = \mathrm{drop}_p\big(\mathbf{e}_i \,\|\, \mathbf{x}_i\big),

    with dropout :math:`p` in training (NCN's dropout after its embedding).
    :math:`\mathbf{E}` starts Xavier-uniform, or orthogonal (NCN's: with
    :math:`D \le N` its columns are orthonormal,
    :math:`\mathbf{E}^\top \mathbf{E} = \mathbf{I}`).

    With ``num_categories`` :math:`C` the features are one categorical
    column, embedded instead of used raw: :math:`\mathbf{x}_i` becomes
    :math:`\mathbf{c}_{k_i}`, a row of a trainable
    :math:`\mathbf{C} \in \mathbb{R}^{C \times D}` started as
    :math:`\mathbf{E}`, where :math:`k_i` is the column of the one in a
    one-hot row (:math:`F = C`) or the value of one integer column
    (:math:`F = 1`); see :func:`category_index`. NCN embeds ogbl-ppa's
    species this way (the argmax of its 58 one-hot features).

    With ``projection`` :math:`P` the dropped-out input is mapped linearly
    to :math:`P` channels, :math:`\mathbf{h}^{(0)}_i = \mathrm{drop}_q\big(
    \mathbf{W}\, \mathrm{drop}_p(\mathbf{e}_i \| \mathbf{x}_i) +
    \mathbf{b}\big)` (NCN's input layer before weight-free propagation,
    :math:`q` its ``--gnndp``: the dropout falls before the propagation,
    so that a node's propagated vector averages its neighbours' masks), the
    features' part from their non-zero entries alone (:class:`InputProjection`).

    Args:
        kind (str): ``"embedding"``, ``"features"`` or ``"both"``.
        num_nodes (int): Number of nodes.
        embedding_dim (int): Size :math:`D` of the trainable embeddings.
        feature_dim (int): Size :math:`F` of the node features (``0`` if none).
        init (str): ``"xavier"`` or ``"orthogonal"``. (default: ``"xavier"``)
        dropout (float): Dropout :math:`p`. (default: ``0.0``)
        num_categories (int, optional): Embed the features as :math:`C`
            categories. (default: ``None``: used raw)
        sparse (bool): The node embedding's gradients are sparse, its rows
            a step read alone (neighbour-sampled training, updated by
            :class:`~plnlp_core.sparse_adam.RowAdam`). (default: ``False``)
        projection (int, optional): Map the input linearly to this many
            channels. (default: ``None``: the input itself)
        projection_dropout (float): Dropout :math:`q` on the projected
            input. (default: ``0.0``)

    Shapes:
        - **input:** node features :math:`(N, F)` (dense, or sparse COO: the
          projection reads its entries alone, raw use densifies it) or ``None``
        - **output:** :math:`(N, D')` with :math:`D'` = :attr:`out_channels`
    """

    def __init__(self, kind: str, num_nodes: int, embedding_dim: int, feature_dim: int,
                 init: str = "xavier", dropout: float = 0.0,
                 num_categories: int | None = None, sparse: bool = False,
                 projection: int | None = None, projection_dropout: float = 0.0) -> None:
        super().__init__()
        self.kind = kind
        self.projection_dropout = projection_dropout
        self.init = init
        self.dropout = dropout
        self.use_embedding = kind in ("embedding", "both")
        self.use_features = kind in ("features", "both")
        self.embedding = nn.Embedding(num_nodes, embedding_dim, sparse=sparse) \
            if self.use_embedding else None
        self.categories = None
        if num_categories is not None:
            if feature_dim not in (1, num_categories):
                raise ValueError(f"{num_categories} categories need {num_categories} one-hot "
                                 f"columns or one integer column, not {feature_dim}")
            self.categories = nn.Embedding(num_categories, embedding_dim)
            feature_dim = embedding_dim
        self.out_channels = embedding_dim * self.use_embedding + feature_dim * self.use_features
        self.feature_projection = self.embedding_projection = None
        if projection is not None:
            self.out_channels = projection
            if self.use_features:
                self.feature_projection = InputProjection(feature_dim, projection, dropout)
            if self.use_embedding:
                self.embedding_projection = nn.Linear(embedding_dim, projection,
                                                      bias=not self.use_features)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for projection in (self.feature_projection, self.embedding_projection):
            if projection is not None:
                projection.reset_parameters()
        for embedding in (self.embedding, self.categories):
            if embedding is None:
                continue
            if self.init == "orthogonal":
                nn.init.orthogonal_(embedding.weight)
            else:
                nn.init.xavier_uniform_(embedding.weight)

    def forward(self, x: Tensor | None, nodes: Tensor | None = None) -> Tensor:
        """Every node's input, or only ``nodes``'s rows (a sampled step's:
        their embedding rows alone get gradients)."""
        parts = []
        if self.use_embedding:
            parts.append(self.embedding.weight if nodes is None else self.embedding(nodes))
        if self.use_features:
            if nodes is not None:  # the rows, gathered where the features are (pinned host memory)
                x = x.index_select(0, nodes.to(x.device)).to(nodes.device, non_blocking=True)
            if self.categories is not None:
                x = self.categories(category_index(x, self.categories.num_embeddings))
            elif x.is_sparse and self.feature_projection is None:
                x = x.to_dense()  # read raw: only the projection reads the entries alone
            parts.append(x)
        if self.projected:
            return self._project(parts)
        h = torch.cat(parts, dim=-1) if len(parts) > 1 else parts[0]
        return nn.functional.dropout(h, self.dropout, self.training)

    @property
    def projected(self) -> bool:
        return self.feature_projection is not None or self.embedding_projection is not None

    def _project(self, parts: list[Tensor]) -> Tensor:
        r""":math:`\mathrm{drop}_q(\mathbf{W} \mathrm{drop}_p(\mathbf{e} \| \mathbf{x}) +
        \mathbf{b})`, one block of :math:`\mathbf{W}` a part."""
        out = self.feature_projection(parts[-1]) if self.use_features else 0
        if self.use_embedding:
            dropped = nn.functional.dropout(parts[0], self.dropout, self.training)
            out = out + self.embedding_projection(dropped)
        if not self.projection_dropout:
            return out
        return nn.functional.dropout(out, self.projection_dropout, self.training)

    def __repr__(self) -> str:
        categories = "" if self.categories is None else \
            f", num_categories={self.categories.num_embeddings}"
        projected = ", projected" if self.projected else ""
        return (f"NodeInput({self.kind}, out_channels={self.out_channels}, init={self.init}, "
                f"dropout={self.dropout}{categories}{projected})")


def category_index(x: Tensor, num_categories: int) -> Tensor:
    r"""The category :math:`k_i \in \{0, \dots, C - 1\}` of each node: the
    column of the one in its one-hot row of ``x`` (:math:`F = C` columns),
    or the value of its one integer column (:math:`F = 1`). Refuses a row
    that is not one-hot, or a value that is no integer below :math:`C`."""
    refuse_categories(summarize_categories(x), num_categories)
    if x.is_sparse:  # one entry a row, checked above
        return x.coalesce().indices()[1]
    return x.argmax(dim=1) if x.size(1) > 1 else x.squeeze(1).long()


def summarize_categories(x: Tensor) -> dict[str, float | int | None]:
    """What ``x`` holds as one categorical column, small enough for a
    dataset's ``meta.json``: its column count, the first node whose row is
    no category (not one-hot over several columns; not a non-negative
    integer in one) with that value, and the largest category's node."""
    if x.is_sparse and x.size(1) == 1:
        x = x.to_dense()
    if x.size(1) > 1:
        first_bad = _first_sparse_row_not_one_hot if x.is_sparse else _first_row_not_one_hot
        return {"columns": x.size(1), "bad_node": first_bad(x),
                "bad_value": None, "largest_node": None, "largest": None}
    column = x.squeeze(1)
    bad = ((column.long() != column) | (column < 0)).nonzero()
    return {"columns": 1, "bad_node": int(bad[0]) if bad.numel() else None,
            "bad_value": float(column[bad[0]]) if bad.numel() else None,
            "largest_node": int(column.argmax()) if column.numel() else None,
            "largest": float(column.max()) if column.numel() else None}


def _first_sparse_row_not_one_hot(x: Tensor) -> int | None:
    """The first row of the sparse ``x`` without exactly one entry, a 1."""
    x = x.coalesce()
    rows = x.indices()[0]
    entries = torch.bincount(rows, minlength=x.size(0))
    bad = entries != 1
    bad[rows[x.values() != 1]] = True
    first = bad.nonzero()
    return int(first[0]) if first.numel() else None


def _first_row_not_one_hot(x: Tensor, chunk: int = 65536) -> int | None:
    """The first row of ``x`` that is not one-hot, read in chunks of rows
    (real-valued features stop at the first)."""
    for start in range(0, x.size(0), chunk):
        rows = x[start:start + chunk]
        bad = (((rows != 0) & (rows != 1)).any(dim=1) | (rows.sum(dim=1) != 1)).nonzero()
        if bad.numel():
            return start + int(bad[0])
    return None


def refuse_categories(summary: dict[str, float | int | None], num_categories: int) -> None:
    """Refuses node features that :func:`summarize_categories` found to be
    no ``num_categories``-way categorical column, naming the first node."""
    node = summary["bad_node"]
    if summary["columns"] > 1 and node is not None:
        raise PLNLPError(f"node {node}'s feature row is not one-hot over the "
                         f"{summary['columns']} columns feature_categories declares; give each "
                         "node one 1, or set feature_categories to null to use the features raw.")
    if summary["columns"] == 1:
        value = summary["bad_value"]
        if node is None and summary["largest_node"] is not None \
                and summary["largest"] >= num_categories:
            node, value = summary["largest_node"], summary["largest"]
        if node is not None:
            raise PLNLPError(f"node {node}'s category column holds {value:g}, outside "
                             f"feature_categories' range 0..{num_categories - 1}; fix the column "
                             "or raise feature_categories.")
