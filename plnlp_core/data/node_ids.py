"""The mapping between a graph's node ids as its user names them and the
positions ``0 .. n - 1`` the model indexes: the identity for OGB's datasets,
the sorted ids of a graph of one's own (see :mod:`plnlp_core.data.own_graph`)."""
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

    def positions(self, values: object, what: str = "node id", column: str = "id") -> Tensor:
        """The positions of the ids ``values`` (a sequence, array or column)
        in the cells of ``column``, refusing any blank cell, any id the
        graph does not have and, when its nodes are numbered, any id that
        is no integer (1.5 is not node 1): each refusal names the cell's
        row, counted from 1."""
        array = _as_arrow(values)
        _refuse_blanks(array, what, column)
        if self.ids is None:
            return self._identity_positions(array, what, column)
        if pa.types.is_integer(self.ids.type) != pa.types.is_integer(array.type):
            array = array.cast(self.ids.type) if self.kind == "string" else \
                self._as_integers(array, what, column)
        position = pc.index_in(array, value_set=self.ids)
        missing = pc.is_null(position)
        if pc.any(missing).as_py():
            unknown = array.filter(missing)[0].as_py()
            raise PLNLPError(f"{what} {unknown!r} is not a node of the model's graph (it has "
                             f"{self.num_nodes} nodes); score only ids the model was trained on.")
        return torch.from_numpy(position.to_numpy(zero_copy_only=False).astype(np.int64))

    def _identity_positions(self, array: pa.Array, what: str, column: str) -> Tensor:
        positions = torch.from_numpy(self._as_integers(array, what, column).to_numpy(
            zero_copy_only=False).astype(np.int64))
        bad = (positions < 0) | (positions >= self.num_nodes)
        if bad.any():
            raise PLNLPError(f"{what} {int(positions[bad][0])} is not a node of the model's graph "
                             f"(its ids are 0 to {self.num_nodes - 1}); score only ids the model "
                             "was trained on.")
        return positions

    def _as_integers(self, array: pa.Array, what: str, column: str) -> pa.Array:
        """``array`` as integers, refused at its first cell that is no
        whole number: never truncated."""
        if pa.types.is_integer(array.type):
            return array
        row = pc.index(_whole_numbers(array), False).as_py()
        if row == -1:
            return array.cast(pa.int64())
        raise PLNLPError(f"{what}s must be integers for this model, and row {row + 1}'s {column} "
                         f"is {array[row].as_py()!r}; its graph's nodes are numbered.")

    def of(self, positions: Tensor) -> pa.Array:
        """The ids at ``positions``."""
        index = pa.array(positions.cpu().numpy())
        return index if self.ids is None else self.ids.take(index)


def _as_arrow(values: object) -> pa.Array:
    """``values`` as one Arrow array, NaN as null; a column of mixed types
    (``[1, "x"]`` in a JSON request) as strings."""
    if isinstance(values, pa.ChunkedArray):
        return values.combine_chunks()
    if isinstance(values, pa.Array):
        return values
    try:
        return pa.array(values, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.array([None if value is None or value != value else str(value)
                         for value in values])


def _refuse_blanks(array: pa.Array, what: str, column: str) -> None:
    """Refuses the first null or empty (or all-space) cell of ``array``."""
    blank = pc.is_null(array)
    if pa.types.is_string(array.type) or pa.types.is_large_string(array.type):
        blank = pc.or_kleene(blank, pc.equal(pc.utf8_trim_whitespace(array), ""))
    row = pc.index(blank, True).as_py()
    if row != -1:
        raise PLNLPError(f"row {row + 1}'s {column} is blank; give each row a {what}, or drop "
                         "the row.")


def _whole_numbers(array: pa.Array) -> pa.Array:
    """Which cells of ``array`` (no nulls) hold an integer that fits 64
    bits: a whole float, or a string of digits; no other type does."""
    if pa.types.is_floating(array.type):
        return pc.and_(pc.equal(pc.floor(array), array), pc.less(pc.abs(array), 2.0**63))
    if pa.types.is_string(array.type) or pa.types.is_large_string(array.type):
        return pc.match_substring_regex(array, r"^-?[0-9]{1,18}$")
    return pa.array(np.zeros(len(array), dtype=bool))
