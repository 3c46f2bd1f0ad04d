"""``torch._dynamo`` imported at its first use, not when PyG is imported.

PyG 2.8 imports ``torch._dynamo`` as it is itself imported: the top of
``torch_geometric.isinstance`` imports it, whose ``is_torch_instance`` looks
through a ``torch.compile``'d model (``torch._dynamo.OptimizedModule``) when
called. torch itself imports it only when first used: a ``torch.compile``,
an optimiser's first parameter group, a process group's start (torch's own
``__getattr__`` imports ``torch._dynamo`` at the first ``torch._dynamo.…``).
That import is most of what PyG's own costs: 1.3 of 3.6 CPU-seconds for
``import torch, torch_geometric`` (Intel Xeon, one core), paid by every
process that imports PyG and never compiles or trains: a command's driver,
which builds the model only to count its parameters (on ``meta``, without
the fills whose first call would import it:
:class:`~plnlp_core.memory_estimate.WithoutInitialValues`), and the Ray
tasks that read a dataset or score pairs.

:class:`DeferredDynamo` finds ``torch_geometric.isinstance`` as Python's own
path finder does and runs it while an empty module stands in for
``torch._dynamo`` (:class:`~pipelines.runtime.module_finder.StandInLoader`); the
stand-in leaves ``sys.modules`` once the module has run, so the first use of
``torch._dynamo``, PyG's ``is_torch_instance`` included, imports torch's own
through Python's import system, whole and under its lock.

Not :class:`importlib.util.LazyLoader`, this module's first form: its module
ran at the first attribute access from anywhere, and
``inspect.getmodule``, which reads ``__file__`` of every module in
``sys.modules``, made that access in the middle of importing
``torch.distributed.tensor`` (``torch.testing.assert_close``'s first call
imports it; torch's custom ops look up their source as they register):
``torch._dynamo`` then imported ``torch.distributed.tensor``, found it half
imported, and stayed half run, so that every optimiser the process built
after failed (``module 'torch._dynamo' has no attribute 'disable'``)."""
from pipelines.runtime.module_finder import StandInLoader, WrappedModuleFinder

MODULE = "torch_geometric.isinstance"
DYNAMO = "torch._dynamo"


class WithoutDynamo(StandInLoader):
    """Runs a module with an empty module standing in for :data:`DYNAMO`,
    unless it was imported already."""

    stood_in = DYNAMO


class DeferredDynamo(WrappedModuleFinder):
    """A finder of ``torch_geometric.isinstance`` alone, run by :class:`WithoutDynamo`."""

    module = MODULE
    loader_wrapper = WithoutDynamo
