"""A meta-path finder of one module, and a loader that runs a module while
another stands in for one it imports: found as Python's own path finder
finds it, its loader wrapped, so that what changes is what the module's
import costs, not which code it is (:mod:`pipelines.runtime.deferred_dynamo`,
:mod:`pipelines.runtime.deferred_auc`)."""
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


class StandInLoader(importlib.abc.Loader):
    """Runs a module as ``loader`` does, while :meth:`stand_in` stands in
    for the module :attr:`stood_in` in ``sys.modules``, unless that was
    imported already. The stand-in leaves ``sys.modules`` as soon as the
    module has run, so that any other import of :attr:`stood_in`, then or
    later, runs the real one through Python's import system (under its lock,
    whole, from whichever thread asks first); it is there only while the
    module runs, from one thread."""

    stood_in: str

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self.loader = loader

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def stand_in(self) -> ModuleType:
        """What the module gets for :attr:`stood_in`: an empty module."""
        return ModuleType(self.stood_in)

    def exec_module(self, module: ModuleType) -> None:
        if self.stood_in in sys.modules:
            self.loader.exec_module(module)
            return
        stand_in = sys.modules[self.stood_in] = self.stand_in()
        try:
            self.loader.exec_module(module)
        finally:
            if sys.modules.get(self.stood_in) is stand_in:
                del sys.modules[self.stood_in]
