"""Constant-time membership tests for node pairs."""
from collections.abc import Callable

import torch
from torch import Tensor


class EdgeSet:
    r"""The set of observed edges, queried by negative samplers so they never
    return a known edge. Pairs are encoded as :math:`u \cdot N + v` and kept
    sorted; a query is one :func:`torch.searchsorted`, or, for graphs of at
    most :attr:`DENSE_LIMIT` possible pairs, one lookup in a dense table of
    all :math:`N^2` pairs (a byte each: 18 MB for ogbl-ddi, where it is thirty
    times faster). Built on a large CSR adjacency (:meth:`from_csr`), it
    keeps no copy: a query searches :math:`v` among :math:`u`'s sorted columns.

    Args:
        edges (Tensor): Edges, shape ``[E, 2]``.
        num_nodes (int): Number of nodes :math:`N`.
        undirected (bool): Whether :math:`(u, v)` also means :math:`(v, u)`.
    """

    DENSE_LIMIT = 2**27
    COPY_LIMIT = 2**25

    def __init__(self, edges: Tensor, num_nodes: int, undirected: bool) -> None:
        self.num_nodes = num_nodes
        self.undirected = undirected
        keys = self._encode(edges)
        if undirected:
            keys = torch.cat([keys, self._encode(edges.flip(-1))])
        self._index(torch.unique(keys))

    @classmethod
    def from_sorted_keys(cls, keys: Tensor, num_nodes: int, undirected: bool,
                         table: Tensor | Callable[[], Tensor] | None = None) -> "EdgeSet":
        r"""The set of the encoded pairs ``keys`` (:math:`u \cdot N + v`),
        already sorted and distinct, as a CSR's rows and columns are;
        ``table``, the dense table of exactly those keys where the caller
        has it, is taken rather than made, or a function that makes it,
        called at the first read of :attr:`table` (queries search the keys
        until then)."""
        edge_set = cls.__new__(cls)
        edge_set.num_nodes, edge_set.undirected = num_nodes, undirected
        edge_set._index(keys, table)
        return edge_set

    @classmethod
    def from_csr(cls, adj: Tensor, undirected: bool) -> "EdgeSet":
        """The set of ``adj``'s entries (a sparse CSR tensor whose rows'
        columns are sorted and distinct, as
        :func:`~plnlp_core.graph.build_adjacency` gives). Past
        :attr:`COPY_LIMIT` entries queries read its rows and columns in
        place, so that a large graph the workers of a node memory-map is
        not copied into a key array by each (its queries take about 2.5
        times as long: 0.4 s against 0.16 s for 200,000 on a 4M-entry
        power-law graph, 2 cores); below, the sorted keys are made."""
        n = adj.size(0)
        if n**2 <= cls.DENSE_LIMIT or adj.col_indices().numel() < cls.COPY_LIMIT:
            rows = torch.repeat_interleave(torch.arange(n, device=adj.device),
                                           adj.crow_indices().diff())
            return cls.from_sorted_keys(rows * n + adj.col_indices(), n, undirected)
        edge_set = cls.__new__(cls)
        edge_set.num_nodes, edge_set.undirected = n, undirected
        edge_set.keys, edge_set._table = None, None
        edge_set.rows = (adj.crow_indices(), adj.col_indices())
        return edge_set

    def _index(self, keys: Tensor, table: Tensor | Callable[[], Tensor] | None = None) -> None:
        self.keys, self._table, self.rows = keys, None, None
        if self.dense:
            self._table = table
            if table is None:
                self._table = torch.zeros(self.num_nodes**2, dtype=torch.bool, device=keys.device)
                self._table[keys] = True

    @property
    def dense(self) -> bool:
        """Whether the set has a dense table of all :math:`N^2` pairs, made
        or to be made (at most :attr:`DENSE_LIMIT` of them)."""
        return self.num_nodes**2 <= self.DENSE_LIMIT and self.rows is None

    @property
    def table(self) -> Tensor | None:
        """The dense bool table ``[N * N]``, made now if it was deferred;
        ``None`` past :attr:`DENSE_LIMIT` pairs."""
        if callable(self._table):
            self._table = self._table()
        return self._table

    @property
    def table_made(self) -> bool:
        """Whether :attr:`table` is there without making it."""
        return isinstance(self._table, Tensor)

    def _encode(self, pairs: Tensor) -> Tensor:
        return pairs[:, 0].long() * self.num_nodes + pairs[:, 1].long()

    @property
    def device(self) -> torch.device:
        """Where the set lives, and its queries must."""
        return self.keys.device if self.rows is None else self.rows[1].device

    def endpoints(self) -> tuple[Tensor, Tensor]:
        r"""Every pair's :math:`u` and :math:`v`, in order (made anew)."""
        if self.rows is None:
            return self.keys.div(self.num_nodes, rounding_mode="floor"), self.keys % self.num_nodes
        crow, col = self.rows
        return torch.repeat_interleave(torch.arange(self.num_nodes, device=col.device),
                                       crow.diff()), col.clone()

    def to(self, device: torch.device | str) -> "EdgeSet":
        """Moves the set to ``device``, where queries must live too."""
        if self.rows is not None:
            self.rows = tuple(part.to(device) for part in self.rows)
            return self
        self.keys = self.keys.to(device)
        self._table = None if self.table is None else self.table.to(device)
        return self

    def contains(self, pairs: Tensor) -> Tensor:
        """A bool mask, shape ``[len(pairs)]``: which pairs are edges."""
        return self.contains_keys(self._encode(pairs))

    def contains_keys(self, keys: Tensor) -> Tensor:
        r"""A bool mask: which encoded pairs :math:`u \cdot N + v` are edges."""
        if self.table_made:
            return self._table[keys]
        if self.rows is not None:
            return self._in_rows(keys)
        if self.keys.numel() == 0:
            return torch.zeros_like(keys, dtype=torch.bool)
        pos = torch.searchsorted(self.keys, keys).clamp(max=self.keys.numel() - 1)
        return self.keys[pos] == keys

    def _in_rows(self, keys: Tensor) -> Tensor:
        r"""Whether each :math:`v` is among row :math:`u`'s columns: a binary
        search in every queried row at once, each round on the queries whose
        row is not yet searched through (most rows are short, so that few
        queries stay past the first rounds)."""
        crow, col = self.rows
        if col.numel() == 0:
            return torch.zeros_like(keys, dtype=torch.bool)
        flat = keys.reshape(-1)
        u, v = flat.div(self.num_nodes, rounding_mode="floor"), flat % self.num_nodes
        low, end = crow[u], crow[u + 1]
        high = end.clone()
        active = (low < high).nonzero().squeeze(1)
        while active.numel():  # the first place in each row whose column is >= v
            a_low, a_high = low[active], high[active]
            middle = (a_low + a_high) // 2
            below = col[middle] < v[active]
            a_low = torch.where(below, middle + 1, a_low)
            a_high = torch.where(below, a_high, middle)
            low[active], high[active] = a_low, a_high
            active = active[a_low < a_high]
        found = (low < end) & (col[low.clamp(max=col.numel() - 1)] == v)
        return found.view(keys.shape)

    def __len__(self) -> int:
        return self.keys.numel() if self.rows is None else self.rows[1].numel()

    def __repr__(self) -> str:
        return f"EdgeSet(num_nodes={self.num_nodes}, pairs={len(self)})"
