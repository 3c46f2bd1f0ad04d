"""Constant-time membership tests for node pairs."""
import torch
from torch import Tensor


class EdgeSet:
    r"""The set of observed edges, queried by negative samplers so they never
    return a known edge. Pairs are encoded as :math:`u \cdot N + v` and kept
    sorted; a query is one :func:`torch.searchsorted`, or, for graphs of at
    most :attr:`DENSE_LIMIT` possible pairs, one lookup in a dense table of
    all :math:`N^2` pairs (a byte each: 18 MB for ogbl-ddi, where it is thirty
    times faster).

    Args:
        edges (Tensor): Edges, shape ``[E, 2]``.
        num_nodes (int): Number of nodes :math:`N`.
        undirected (bool): Whether :math:`(u, v)` also means :math:`(v, u)`.
    """

    DENSE_LIMIT = 2**27

    def __init__(self, edges: Tensor, num_nodes: int, undirected: bool) -> None:
        self.num_nodes = num_nodes
        self.undirected = undirected
        keys = self._encode(edges)
        if undirected:
            keys = torch.cat([keys, self._encode(edges.flip(-1))])
        self._index(torch.unique(keys))

    @classmethod
    def from_sorted_keys(cls, keys: Tensor, num_nodes: int, undirected: bool) -> "EdgeSet":
        r"""The set of the encoded pairs ``keys`` (:math:`u \cdot N + v`),
        already sorted and distinct, as a CSR's rows and columns are."""
        edge_set = cls.__new__(cls)
        edge_set.num_nodes, edge_set.undirected = num_nodes, undirected
        edge_set._index(keys)
        return edge_set

    def _index(self, keys: Tensor) -> None:
        self.keys, self.table = keys, None
        if self.num_nodes**2 <= self.DENSE_LIMIT:
            self.table = torch.zeros(self.num_nodes**2, dtype=torch.bool, device=keys.device)
            self.table[keys] = True

    def _encode(self, pairs: Tensor) -> Tensor:
        return pairs[:, 0].long() * self.num_nodes + pairs[:, 1].long()

    def to(self, device: torch.device | str) -> "EdgeSet":
        """Moves the set to ``device``, where queries must live too."""
        self.keys = self.keys.to(device)
        self.table = None if self.table is None else self.table.to(device)
        return self

    def contains(self, pairs: Tensor) -> Tensor:
        """A bool mask, shape ``[len(pairs)]``: which pairs are edges."""
        return self.contains_keys(self._encode(pairs))

    def contains_keys(self, keys: Tensor) -> Tensor:
        r"""A bool mask: which encoded pairs :math:`u \cdot N + v` are edges."""
        if self.table is not None:
            return self.table[keys]
        if self.keys.numel() == 0:
            return torch.zeros_like(keys, dtype=torch.bool)
        pos = torch.searchsorted(self.keys, keys).clamp(max=self.keys.numel() - 1)
        return self.keys[pos] == keys

    def __len__(self) -> int:
        return self.keys.numel()

    def __repr__(self) -> str:
        return f"EdgeSet(num_nodes={self.num_nodes}, pairs={len(self)})"
