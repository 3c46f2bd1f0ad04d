"""A meta-path finder of one module: found as Python's own path finder finds
it, its loader wrapped, so that what changes is when or how the module's
code runs, not which code it is (:mod:`plnlp_core.deferred_dynamo`,
:mod:`plnlp_core.deferred_auc`)."""
import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType


class WrappedModuleFinder(importlib.abc.MetaPathFinder):
    """Finds :attr:`module` alone, its loader wrapped in :attr:`loader_wrapper`;
    every other name goes on to the finders after it."""

    module: str
    loader_wrapper: type[importlib.abc.Loader]

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if fullname != self.module:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = self.loader_wrapper(spec.loader)
        return spec

    @classmethod
    def install(cls) -> None:
        """Puts one such finder ahead of Python's finders, once a process."""
        if not any(isinstance(finder, cls) for finder in sys.meta_path):
            sys.meta_path.insert(0, cls())
