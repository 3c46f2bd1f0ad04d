"""Name-to-implementation tables, one per kind (encoder, predictor, loss, sampler)."""
from collections.abc import Callable, Mapping
from typing import Generic, TypeVar

from plnlp_core.errors import PLNLPError

T = TypeVar("T")


class Registry(Generic[T]):
    """Maps the names a config uses (``"sage"``, ``"auc"``) to implementations.

    Args:
        kind (str): What the table holds, used in error messages
            (``"encoder"``).
        otherwise (str): What an unknown name's refusal offers besides the
            names (``"your own as module.path:ClassName"``). (default: ``""``)
    """

    def __init__(self, kind: str, otherwise: str = "") -> None:
        self.kind = kind
        self.otherwise = otherwise
        self._entries: dict[str, T] = {}

    @classmethod
    def of(cls, kind: str, entries: Mapping[str, T], otherwise: str = "") -> "Registry[T]":
        """A table of ``kind`` holding ``entries`` (name to entry) at once."""
        table = cls(kind, otherwise)
        for name, entry in entries.items():
            table.register(name)(entry)
        return table

    def register(self, name: str) -> Callable[[T], T]:
        def add(entry: T) -> T:
            if name in self._entries:
                raise KeyError(f"{self.kind} {name!r} is registered twice")
            self._entries[name] = entry
            return entry

        return add

    def get(self, name: str) -> T:
        if name not in self._entries:
            otherwise = f", or {self.otherwise}" if self.otherwise else ""
            raise PLNLPError(
                f"unknown {self.kind} {name!r}; choose one of: {', '.join(self.names)}{otherwise}."
            )
        return self._entries[name]

    @property
    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {self.names})"
