"""OGB's link ``Evaluator`` without scikit-learn's metrics until an AUC is asked for.

``ogb.linkproppred.evaluate`` imports ``roc_auc_score`` from ``sklearn.metrics`` at
its top, for the one OGB link dataset whose metric is ROC-AUC (ogbl-vessel);
the Hits@K and MRR of the graphs here never call it. That import is 0.85
CPU-seconds (Intel Xeon, after torch and PyG) of every process that imports
``ogb.linkproppred``: each training process, which evaluates every epoch,
and the evaluate stage's task.

:class:`DeferredAUC` finds ``ogb.linkproppred.evaluate`` as Python's own path
finder does and runs it while ``sklearn.metrics`` stands in as a module whose
``roc_auc_score`` (:func:`roc_auc_score`) imports scikit-learn's at its first
call; the stand-in leaves ``sys.modules`` once the module has run, so any
other import of ``sklearn.metrics`` gets scikit-learn's own. A process that
imported ``sklearn.metrics`` before runs the module as usual. The stand-in
is in ``sys.modules`` only while the module runs, from one thread."""
from types import ModuleType

from pipelines.runtime.module_finder import StandInLoader, WrappedModuleFinder

MODULE = "ogb.linkproppred.evaluate"
METRICS = "sklearn.metrics"


def roc_auc_score(*args: object, **kwargs: object) -> float:
    """scikit-learn's ``roc_auc_score``, imported at this first call."""
    from sklearn.metrics import roc_auc_score as imported

    return imported(*args, **kwargs)


class WithoutSklearnMetrics(StandInLoader):
    """Runs a module with :data:`METRICS` standing in as :func:`roc_auc_score`
    alone, unless it was imported already."""

    stood_in = METRICS

    def stand_in(self) -> ModuleType:
        metrics = ModuleType(METRICS)
        metrics.roc_auc_score = roc_auc_score
        return metrics


class DeferredAUC(WrappedModuleFinder):
    """A finder of ``ogb.linkproppred.evaluate`` alone, run by :class:`WithoutSklearnMetrics`."""

    module = MODULE
    loader_wrapper = WithoutSklearnMetrics
