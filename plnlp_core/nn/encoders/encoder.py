from collections.abc import Mapping

import torch
from torch import Tensor, nn

# importing the layer modules registers their layers in ENCODERS
from plnlp_core.nn.encoders import hop_diffusion, pure_gcn, pyg_layers, sum_aggregation  # noqa: F401
from plnlp_core.nn.encoders.mean_aggregation import SymmetricSAGEConv
from plnlp_core.nn.encoders.pyg_layers import GATLayer
from plnlp_core.nn.encoders.registry import ENCODERS
from plnlp_core.nn.encoders.weight_free import WeightFreeConv
from plnlp_core.nn.relu_dropout import relu_dropout
from plnlp_core.sampling.neighbors import SampledSubgraph

WEIGHT_FREE_ENCODERS = tuple(name for name in ENCODERS.names
                             if isinstance(ENCODERS.get(name), type)
                             and issubclass(ENCODERS.get(name), WeightFreeConv))
"""Encoders without weights: their input's size is their output's."""

CHUNKED_FROM_NODES = 2**20
"""Graphs of at least this many nodes (ogbl-citation2's 2.9 M; not ddi,
collab or ppa) are encoded in chunks of rows at inference."""
CHUNK_ROWS = 2**16
"""The rows of a layer computed at once in chunked inference."""

BIPARTITE_LAYERS = (SymmetricSAGEConv, GATLayer)
"""Layers that take ``(sources, targets)`` input: a sampled neighbourhood's
layers are trimmed to the nodes the next layer reads."""


class GNNEncoder(nn.Module):
    r"""The node-level neighborhood encoder (paper §4.1, Eq. 4): a stack of
    message-passing layers over the training graph,

    .. math::
        \mathbf{h}^{(l)}_i = \sigma\left(\mathrm{CONV}^{(l)}\left(
        \mathbf{h}^{(l-1)}_i, \{\mathbf{h}^{(l-1)}_j : j \in \mathcal{N}(i)\}
        \right)\right),

    with ReLU and dropout between layers, and after the last layer too when
    ``activate_last_layer`` (the authors' one-layer encoder does so);
    ``layer_norm`` puts a LayerNorm before each of them (NCN's ``--ln``).
    Without ``relu``, :math:`\sigma` is the identity and dropout alone
    stays: a stack of linear convolutions, whose only non-linearity is the
    predictor's (Refined-GAE's ogbl-ddi encoder, Ma et al. 2024).
    With ``residual`` each layer whose input and output sizes agree adds its
    input, :math:`\mathbf{h}^{(l)} = \mathbf{h}^{(l-1)} + \sigma(\ldots)`
    (NCN's ``--res``). With ``initial_residual`` :math:`\alpha > 0` every
    layer also adds the node input itself before its activation,

    .. math::
        \mathbf{h}^{(l)} = \sigma\left(\mathrm{CONV}^{(l)}(\mathbf{h}^{(l-1)})
        + \alpha\, \mathbf{h}^{(0)}\right),

    so that the trainable embedding reaches the output however deep the
    stack (Refined-GAE's ``--residual``, Ma et al. 2024: 0.1 on ogbl-ddi).
    The ``"none"`` encoder returns its input, which
    makes the model matrix factorisation over the node input.

    Weight-free layers (``"sum"``, ``"pure_gcn"``) are linear maps of the
    graph, stacked as NCN stacks them: nothing between layers, and dropout
    alone (no ReLU) on the last layer's output (NCN's tail dropout).

    With ``edge_dropout`` :math:`p > 0` every layer of a training pass reads
    the adjacency with its entries dropped as dropout drops activations,
    :math:`\tilde{A}_{ij} = A_{ij} m_{ij} / (1 - p)`,
    :math:`m_{ij} \sim \mathrm{Bernoulli}(1 - p)`, drawn anew for each layer
    and each direction of an edge (NCN's ``--gnnedp``): the encoder's
    message passing is thinned, the edge level's common neighbours are not.

    Args:
        name (str or type): ``"sage"`` (mean aggregation), ``"gcn"`` (symmetric
            normalisation with self-loops), ``"gat"``, ``"agdn"`` (hop-wise
            weighted diffusion, :class:`HopDiffusionConv`), ``"sum"`` (sum
            aggregation without weights, :class:`SumAggregation`),
            ``"pure_gcn"`` (GCN's propagation without weights,
            :class:`PureGCN`) or ``"none"``; or a layer class of one's
            own, built as ``layer(in_channels, out_channels, **layer_options)``
            (:data:`plnlp_core.parts.kinds.ENCODER`).
        in_channels (int): Size of the node input.
        hidden_channels (int): Size of every layer's output.
        num_layers (int): Number of layers.
        dropout (float): Dropout between layers. (default: ``0.0``)
        activate_last_layer (bool): ReLU and dropout after the last layer
            as well. (default: ``False``)
        residual (bool): Add each layer's input to its output. (default:
            ``False``)
        layer_norm (bool): A LayerNorm before each ReLU. (default: ``False``)
        edge_dropout (float): The fraction :math:`p` of adjacency entries
            each layer drops in training. (default: ``0.0``)
        initial_residual (float): The weight :math:`\alpha` of the node
            input added to every layer's output; its size must be
            ``hidden_channels``. (default: ``0.0``)
        layer_options (Mapping, optional): Keyword arguments every layer is
            built with (``{"hops": K}`` for ``"agdn"``). (default: ``None``)
        relu (bool): A ReLU before each dropout between layers. (default:
            ``True``)

    Shapes:
        - **input:** node input :math:`(N, F)`, adjacency :math:`(N, N)`
          (sparse, or an ``edge_index`` of shape :math:`(2, E)`)
        - **output:** :math:`(N, C)` with :math:`C` = :attr:`out_channels`
    """

    def __init__(
        self, name: str | type[nn.Module], in_channels: int, hidden_channels: int,
        num_layers: int,
        dropout: float = 0.0, activate_last_layer: bool = False, residual: bool = False,
        layer_norm: bool = False, edge_dropout: float = 0.0, initial_residual: float = 0.0,
        layer_options: Mapping[str, object] | None = None, relu: bool = True,
    ) -> None:
        super().__init__()
        self.name = name if isinstance(name, str) else name.__qualname__
        self.dropout = dropout
        self.relu = relu
        self.activate_last_layer = activate_last_layer
        self.residual = residual
        self.edge_dropout = edge_dropout
        self.initial_residual = initial_residual
        conv = ENCODERS.get(name) if isinstance(name, str) else name
        self.convs = nn.ModuleList()
        self.norms = nn.ModuleList()
        if conv is not None:
            sizes = [in_channels] + [hidden_channels] * num_layers
            self.convs.extend(conv(a, b, **(layer_options or {}))
                              for a, b in zip(sizes[:-1], sizes[1:], strict=True))
        if edge_dropout > 0:
            self.stop_caching()  # the graph changes at every pass
        self.weight_free = bool(self.convs) and isinstance(self.convs[0], WeightFreeConv)
        if initial_residual and self.convs and in_channels != hidden_channels:
            raise ValueError(f"initial_residual adds the input ({in_channels} channels) to "
                             f"layers of {hidden_channels}")
        if layer_norm and self.weight_free:
            raise ValueError(f"{name} has no weights and no activation to normalise before")
        if layer_norm:
            self.norms.extend(nn.LayerNorm(hidden_channels) for _ in self.convs)
        self.out_channels = hidden_channels if self.convs else in_channels
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for module in [*self.convs, *self.norms]:
            if hasattr(module, "reset_parameters"):  # a layer of one's own may have none
                module.reset_parameters()

    def stop_caching(self) -> None:
        """Makes layers that cache their normalised adjacency (GCN) compute
        it at every pass, for a graph that changes between passes."""
        for conv in self.convs:
            if getattr(conv, "cached", False):
                conv.cached = False

    def forward(self, x: Tensor, adj: Tensor | SampledSubgraph) -> Tensor:
        """Every node's vector, or on a :class:`SampledSubgraph` the
        vectors of its nodes within the hops the last layer still reads
        (its seeds, where the layers take bipartite input: :meth:`forward_sampled`)."""
        if isinstance(adj, SampledSubgraph):
            return self.forward_sampled(x, adj)
        if self._encodes_in_chunks(adj):
            return self.forward_in_chunks(x, adj)
        h0 = x
        for i, conv in enumerate(self.convs):
            x = self._layer(i, conv, x, x, self._drop_entries(adj), h0)
        return x

    def forward_sampled(self, x: Tensor, subgraph: SampledSubgraph) -> Tensor:
        r"""The layers on a sampled neighbourhood, each computed only for the
        nodes the next one reads (PyG's ``trim_to_layer``): of :math:`L`
        layers, layer :math:`l` (from 1) updates the nodes within hop
        :math:`L - l` from those within hop :math:`L - l + 1`, over the
        edges drawn at hops :math:`1 \ldots L - l + 1`; the last updates
        the seeds alone. GCN's layers take no bipartite input and run over
        the whole subgraph (their output's seed rows are the same)."""
        if not all(isinstance(conv, BIPARTITE_LAYERS) for conv in self.convs):
            return self.forward(x, subgraph.edge_index)
        h0, depth = x, len(self.convs)
        by_target = target_rows(subgraph)
        for i, conv in enumerate(self.convs):
            sources, targets = subgraph.hop_nodes[depth - i], subgraph.hop_nodes[depth - i - 1]
            if isinstance(conv, SymmetricSAGEConv):  # a CSR product, not a scatter
                graph = row_slice(*by_target, 0, targets, sources)
            else:
                graph = subgraph.edge_index[:, :subgraph.hop_edges[depth - i]]
            inputs = x if sources == x.size(0) else x[:sources]  # a slice's backward fills zeros
            x = self._layer(i, conv, (inputs, x[:targets]), x[:targets], graph, h0[:targets])
        return x

    def _encodes_in_chunks(self, adj: Tensor) -> bool:
        """Inference (no gradients) on a CSR graph of at least
        :data:`CHUNKED_FROM_NODES` nodes with SAGE layers alone."""
        return (not torch.is_grad_enabled() and isinstance(adj, Tensor)
                and adj.layout == torch.sparse_csr and adj.size(0) >= CHUNKED_FROM_NODES
                and bool(self.convs) and all(isinstance(conv, SymmetricSAGEConv)
                                             for conv in self.convs))

    @torch.no_grad()
    def forward_in_chunks(self, x: Tensor, adj: Tensor) -> Tensor:
        """Every node's vector over all its neighbours, layer by layer, each
        layer's rows :data:`CHUNK_ROWS` at a time (bipartite: the chunk's
        rows of ``adj`` against every node's input), so that besides the
        layers' inputs and outputs only a chunk's intermediates are held.
        Each row is the sum :meth:`forward` computes, in the same order."""
        h0 = x
        crow, col, values = adj.crow_indices(), adj.col_indices(), adj.values()
        for i, conv in enumerate(self.convs):
            parts = []
            for start in range(0, adj.size(0), CHUNK_ROWS):
                end = min(start + CHUNK_ROWS, adj.size(0))
                rows = row_slice(crow, col, values, start, end, adj.size(1))
                parts.append(self._layer(i, conv, (x, x[start:end]), x[start:end], rows,
                                         h0[start:end]))
            x = torch.cat(parts)
        return x

    def _layer(self, i: int, conv: nn.Module, inputs: Tensor | tuple[Tensor, Tensor],
               x: Tensor, adj: Tensor, h0: Tensor) -> Tensor:
        """Layer ``i`` on ``inputs`` (``x``, or bipartite ``(sources, x)``),
        with its initial residual, activation and residual."""
        out = self._convolve(conv, inputs, adj)
        if self.initial_residual:
            out = out + self.initial_residual * h0
        if self.weight_free:
            if i == len(self.convs) - 1:
                out = nn.functional.dropout(out, self.dropout, self.training)
        elif i < len(self.convs) - 1 or self.activate_last_layer:
            out = self._activate(self.norms[i](out) if self.norms else out)
        return x + out if self.residual and out.shape == x.shape else out

    def _drop_entries(self, adj: Tensor) -> Tensor:
        """``adj`` with its entries dropped and the kept scaled (training,
        ``edge_dropout`` > 0), else ``adj`` itself."""
        if not (self.training and self.edge_dropout > 0):
            return adj
        values = nn.functional.dropout(adj.values(), self.edge_dropout, True)
        return torch.sparse_csr_tensor(adj.crow_indices(), adj.col_indices(), values, adj.shape)

    @staticmethod
    def _convolve(conv: nn.Module, x: Tensor | tuple[Tensor, Tensor], adj: Tensor) -> Tensor:
        """One layer. Under autocast, SAGE keeps its sparse aggregation in
        fp32 itself; PyG's other layers run wholly in fp32, as sparse CSR
        products have no bfloat16 kernel on every device."""
        device = adj.device.type
        if isinstance(conv, SymmetricSAGEConv) or not torch.is_autocast_enabled(device):
            return conv(x, adj)
        with torch.autocast(device, enabled=False):
            return conv(tuple(t.float() for t in x) if isinstance(x, tuple) else x.float(), adj)

    def _activate(self, x: Tensor) -> Tensor:
        if not self.relu:
            return nn.functional.dropout(x, self.dropout, self.training)
        return relu_dropout(x, self.dropout, self.training)

    def __repr__(self) -> str:
        return (f"GNNEncoder({self.name}, layers={len(self.convs)}, "
                f"out_channels={self.out_channels}, "
                f"activate_last_layer={self.activate_last_layer}, residual={self.residual}, "
                f"layer_norm={bool(self.norms)}, edge_dropout={self.edge_dropout}, "
                f"initial_residual={self.initial_residual}, relu={self.relu})")


def row_slice(crow: Tensor, col: Tensor, values: Tensor, start: int, end: int,
              num_columns: int) -> Tensor:
    """Rows ``start:end`` of the CSR matrix ``(crow, col, values)``, as one."""
    first, last = int(crow[start]), int(crow[end])
    return torch.sparse_csr_tensor(crow[start:end + 1] - first, col[first:last],
                                   values[first:last], (end - start, num_columns))


def target_rows(subgraph: SampledSubgraph) -> tuple[Tensor, Tensor, Tensor]:
    """``subgraph``'s edges as the CSR ``(crow, col, values)`` of its targets
    (rows) against its sources: the edges drawn at hops ``1..k`` are the
    rows of the nodes within hop ``k - 1``, its first rows."""
    source, target = subgraph.edge_index
    order = torch.argsort(target, stable=True)
    counts = torch.bincount(target, minlength=subgraph.hop_nodes[-2])
    crow = torch.cat([counts.new_zeros(1), counts.cumsum(0)])
    return crow, source[order], torch.ones(order.numel(), device=order.device)
