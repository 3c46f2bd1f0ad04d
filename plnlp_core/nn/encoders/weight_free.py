import torch
from torch import Tensor, nn


class WeightFreeConv(nn.Module):
    r"""A message-passing layer without weights (NCN's ``pure`` layers):
    :math:`\mathbf{X}' = \mathrm{propagate}(\mathbf{X}, \mathbf{A})` over a
    sparse CSR adjacency, with as many output channels as input ones. The
    product runs in fp32, under bfloat16 autocast too (sparse CSR products
    have no bfloat16 kernel on every device). Subclasses give
    :meth:`propagate`; :class:`GNNEncoder` stacks them with nothing between
    layers.

    Args:
        in_channels (int): Size of the input; must equal ``out_channels``.
        out_channels (int): Size of the output.
    """

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        if in_channels != out_channels:
            raise ValueError(f"{type(self).__name__} has no weights: in_channels "
                             f"({in_channels}) must equal out_channels ({out_channels})")
        self.channels = out_channels

    def reset_parameters(self) -> None:
        """Nothing to reset: no weights."""

    def forward(self, x: Tensor, adj: Tensor) -> Tensor:
        with torch.autocast(x.device.type, enabled=False):
            return self.propagate(x.to(adj.dtype), adj)

    def propagate(self, x: Tensor, adj: Tensor) -> Tensor:
        """The layer's map of ``x`` over ``adj``, both in fp32."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.channels})"
