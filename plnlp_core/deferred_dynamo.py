"""``torch._dynamo`` imported at its first use, not when PyG is imported.

PyG 2.8 imports ``torch._dynamo`` as it is itself imported
(``torch_geometric.isinstance``, which looks through a ``torch.compile``'d
model), while torch imports it only when first used: a ``torch.compile``, an
optimiser's first parameter group, a process group's start. That import
is most of what PyG's own costs: 1.3 of 3.6 CPU-seconds for ``import torch,
torch_geometric`` (Intel Xeon, one core), paid by every process that imports
PyG and never compiles or trains: a command's driver, which builds the model
only to count its parameters (on ``meta``, without the fills whose first
call would import it: :class:`~plnlp_core.memory_estimate.WithoutInitialValues`),
and the Ray tasks that read a dataset or score pairs.

:class:`DeferredDynamo` finds ``torch._dynamo`` as Python's own path finder
does, with :class:`importlib.util.LazyLoader`: the module object exists at
once and runs its code at its first attribute access, so a process that
uses it gets the same module, only later. Python before 3.12 does not guard
that first access against a second thread making it at the same moment; in
this product's processes one thread makes it (the one that builds the
optimiser, or starts the process group)."""
import importlib.util

from plnlp_core.module_finder import WrappedModuleFinder

MODULE = "torch._dynamo"


class DeferredDynamo(WrappedModuleFinder):
    """A finder of ``torch._dynamo`` alone, whose module runs at its first
    attribute access."""

    module = MODULE
    loader_wrapper = importlib.util.LazyLoader
