import torch
from torch import Tensor, nn


class InputProjection(nn.Module):
    r"""A linear map of dropped-out node features, the input layer NCN puts
    before weight-free propagation (Wang, Yang and Zhang 2023: ``--xdp``,
    then ``nn.Linear(in_channels, hidden_channels)`` before ``puregcn``),

    .. math::
        \mathbf{h}_i = \mathbf{W}\, \mathrm{drop}_p(\mathbf{x}_i) + \mathbf{b},

    computed from the non-zero entries of :math:`\mathbf{X}` alone: dropout
    of a zero is zero, so dropping each non-zero entry with probability
    :math:`p` (and scaling the kept by :math:`1 / (1 - p)`) is dropout of
    the whole row, and :math:`\mathbf{W} \mathrm{drop}_p(\mathbf{x}_i)` is a
    weighted sum of :math:`\mathbf{W}`'s columns (one ``embedding_bag``).
    A bag of words (Cora: 1.3 % of its entries) costs its words, not its
    vocabulary, forward and backward. The non-zeros of the last input are
    kept while the same tensor comes back (the features, every step).

    Args:
        in_channels (int): Size :math:`F` of the features.
        out_channels (int): Size :math:`D` of the output.
        dropout (float): Dropout :math:`p` on the features in training.
            (default: ``0.0``)
        bias (bool): Learn :math:`\mathbf{b}`. (default: ``True``)

    Shapes:
        - **input:** node features :math:`(N, F)`
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

    def entries(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """``x``'s non-zero entries in row order: their columns, values and
        each row's first entry (``embedding_bag``'s offsets)."""
        if self._source is not x:
            rows, cols = x.nonzero(as_tuple=True)
            counts = torch.bincount(rows, minlength=x.size(0))
            offsets = torch.cumsum(counts, 0) - counts
            self._source, self._entries = x, (cols, x[rows, cols], offsets)
        return self._entries

    def forward(self, x: Tensor) -> Tensor:
        cols, values, offsets = self.entries(x)
        if self.training and self.dropout > 0:
            values = nn.functional.dropout(values, self.dropout, True)
        out = nn.functional.embedding_bag(cols, self.weight, offsets, mode="sum",
                                          per_sample_weights=values.to(self.weight.dtype))
        return out if self.bias is None else out + self.bias

    def __repr__(self) -> str:
        return (f"InputProjection({self.in_channels}, {self.out_channels}, "
                f"dropout={self.dropout})")
