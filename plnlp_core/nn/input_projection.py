import torch
from torch import Tensor, nn

from plnlp_core.nn.relu_dropout import dropout_multipliers


class InputProjection(nn.Module):
    r"""A linear map of dropped-out node features, the input layer NCN puts
    before weight-free propagation (Wang, Yang and Zhang 2023: ``--xdp``,
    then ``nn.Linear(in_channels, hidden_channels)`` before ``puregcn``),

    .. math::
        \mathbf{h}_i = \mathbf{W}\, \mathrm{drop}_p(\mathbf{x}_i) + \mathbf{b},

    computed from the non-zero entries of :math:`\mathbf{X}` alone: dropout
    of a zero is zero, so dropping each non-zero entry with probability
    :math:`p` and scaling the kept by :math:`1 / (1 - p)`
    (:func:`~plnlp_core.nn.relu_dropout.dropout_multipliers`) is dropout of
    the whole row, and :math:`\mathbf{W} \mathrm{drop}_p(\mathbf{x}_i)` is
    a weighted sum of :math:`\mathbf{W}`'s columns (one ``embedding_bag``).
    A bag of words (Cora: 1.3 % of its entries) costs its words, not its
    vocabulary, forward and backward: the weight's gradient
    :math:`\partial \mathcal{L} / \partial \mathbf{W}_{f} = \sum_{i} x_{if}
    \, \partial \mathcal{L} / \partial \mathbf{h}_i` is one more
    ``embedding_bag``, over the entries in column order (on Cora 0.3 ms
    where ``embedding_bag``'s own backward sorts them at every step, 3 ms).
    The non-zeros of the last input, in both orders, are kept while the same
    tensor comes back (the features, every step).

    Args:
        in_channels (int): Size :math:`F` of the features.
        out_channels (int): Size :math:`D` of the output.
        dropout (float): Dropout :math:`p` on the features in training.
            (default: ``0.0``)
        bias (bool): Learn :math:`\mathbf{b}`. (default: ``True``)

    Shapes:
        - **input:** node features :math:`(N, F)`, dense or sparse COO
        - **output:** :math:`(N, D)`
    """

    def __init__(self, in_channels: int, out_channels: int, dropout: float = 0.0,
                 bias: bool = True) -> None:
        super().__init__()
        self.in_channels, self.out_channels, self.dropout = in_channels, out_channels, dropout
        self.weight = nn.Parameter(torch.empty(in_channels, out_channels))
        self.bias = nn.Parameter(torch.empty(out_channels)) if bias else None
        self._source: Tensor | None = None
        self._entries: tuple[Tensor, Tensor, Tensor] | None = None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """As :class:`torch.nn.Linear` starts its weight and bias."""
        bound = self.in_channels ** -0.5
        nn.init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            nn.init.uniform_(self.bias, -bound, bound)

    def entries(self, x: Tensor) -> "FeatureEntries":
        """``x``'s non-zero entries in row order and in column order."""
        if self._source is not x:
            self._source, self._entries = x, FeatureEntries(x)
        return self._entries

    def forward(self, x: Tensor) -> Tensor:
        entries = self.entries(x)
        values = entries.values
        if self.training and self.dropout > 0:
            values = values * dropout_multipliers(values.shape, self.dropout, values.device,
                                                  values.dtype)
        out = _SparseProduct.apply(self.weight, entries, values.to(self.weight.dtype))
        return out if self.bias is None else out + self.bias

    def __repr__(self) -> str:
        return (f"InputProjection({self.in_channels}, {self.out_channels}, "
                f"dropout={self.dropout})")


class FeatureEntries:
    """The non-zero entries of a feature matrix ``[N, F]``, dense or sparse
    COO: in row order
    (``cols``, ``values``, each row's first entry ``offsets``) and in
    column order (``rows_by_col``, ``order`` into the row order, each
    column's first entry ``col_offsets``), as ``embedding_bag`` reads
    them."""

    def __init__(self, x: Tensor) -> None:
        if x.is_sparse:
            x = x.coalesce()  # its entries in row order
            (rows, self.cols), self.values = x.indices(), x.values()
        else:
            rows, self.cols = x.nonzero(as_tuple=True)
            self.values = x[rows, self.cols]
        self.offsets = _firsts(rows, x.size(0))
        self.order = torch.argsort(self.cols, stable=True)
        self.rows_by_col = rows.index_select(0, self.order)
        self.col_offsets = _firsts(self.cols, x.size(1))


def _firsts(index: Tensor, size: int) -> Tensor:
    """The place of each value's first entry in ``index`` sorted."""
    counts = torch.bincount(index, minlength=size)
    return torch.cumsum(counts, 0) - counts


class _SparseProduct(torch.autograd.Function):
    """Forward :math:`\\mathrm{drop}_p(\\mathbf{X}) \\mathbf{W}`, backward
    :math:`\\mathrm{drop}_p(\\mathbf{X})^\\top \\mathbf{G}`, each one
    ``embedding_bag`` (the values are data: no gradient)."""

    @staticmethod
    def forward(ctx: torch.autograd.function.FunctionCtx, weight: Tensor,
                entries: FeatureEntries, values: Tensor) -> Tensor:
        ctx.entries, ctx.values = entries, values
        return nn.functional.embedding_bag(entries.cols, weight, entries.offsets, mode="sum",
                                           per_sample_weights=values)

    @staticmethod
    def backward(ctx: torch.autograd.function.FunctionCtx,
                 grad: Tensor) -> tuple[Tensor, None, None]:
        entries = ctx.entries
        weights = ctx.values.index_select(0, entries.order).to(grad.dtype)
        grad_weight = nn.functional.embedding_bag(entries.rows_by_col, grad.contiguous(),
                                                  entries.col_offsets, mode="sum",
                                                  per_sample_weights=weights)
        ctx.entries = ctx.values = None
        return grad_weight, None, None
