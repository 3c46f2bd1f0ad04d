"""The mapping between a graph's node ids as its user names them and the
positions ``0 .. n - 1`` the model indexes: the identity for OGB's datasets,
the sorted ids of a graph of one's own (see :mod:`plnlp_core.own_graph`)."""
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch
from torch import Tensor

from plnlp_core.errors import PLNLPError


class NodeIds:
    """A graph's node ids.

    Args:
        num_nodes (int): Number of nodes :math:`n`.
        ids (pyarrow.Array, optional): The id of each position, sorted; ``None``
            when the ids are the positions themselves. (default: ``None``)
    """

    def __init__(self, num_nodes: int, ids: pa.Array | None = None) -> None:
        if ids is not None and len(ids) != num_nodes:
            raise ValueError(f"{len(ids)} node ids for {num_nodes} nodes")
        self.num_nodes = num_nodes
        self.ids = ids

    @property
    def kind(self) -> str:
        """``"long"`` or ``"string"``: what the ids are."""
        if self.ids is None or pa.types.is_integer(self.ids.type):
            return "long"
        return "string"

    def positions(self, values: object, what: str = "node id") -> Tensor:
        """The positions of the ids ``values`` (a sequence or array), refusing
        any id the graph does not have."""
        array = pa.array(np.asarray(values)) if not isinstance(values, pa.Array) else values
        if self.ids is None:
            return self._identity_positions(array, what)
        if pa.types.is_integer(self.ids.type) != pa.types.is_integer(array.type):
            array = array.cast(self.ids.type) if self.kind == "string" else \
                self._as_integers(array, what)
        position = pc.index_in(array, value_set=self.ids)
        missing = pc.is_null(position)
        if pc.any(missing).as_py():
            unknown = array.filter(missing)[0].as_py()
            raise PLNLPError(f"{what} {unknown!r} is not a node of the model's graph (it has "
                             f"{self.num_nodes} nodes); score only ids the model was trained on.")
        return torch.from_numpy(position.to_numpy(zero_copy_only=False).astype(np.int64))

    def _identity_positions(self, array: pa.Array, what: str) -> Tensor:
        positions = torch.from_numpy(self._as_integers(array, what).to_numpy(
            zero_copy_only=False).astype(np.int64))
        bad = (positions < 0) | (positions >= self.num_nodes)
        if bad.any():
            raise PLNLPError(f"{what} {int(positions[bad][0])} is not a node of the model's graph "
                             f"(its ids are 0 to {self.num_nodes - 1}); score only ids the model "
                             "was trained on.")
        return positions

    def _as_integers(self, array: pa.Array, what: str) -> pa.Array:
        if pa.types.is_integer(array.type):
            return array
        try:
            return array.cast(pa.int64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            raise PLNLPError(f"{what}s must be integers for this model (e.g. {array[0].as_py()!r} "
                             "is not); its graph's nodes are numbered.") from None

    def of(self, positions: Tensor) -> pa.Array:
        """The ids at ``positions``."""
        index = pa.array(positions.cpu().numpy())
        return index if self.ids is None else self.ids.take(index)
