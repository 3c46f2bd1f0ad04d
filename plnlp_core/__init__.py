"""PLNLP, the method: pairwise learning for neural link prediction, with
torch, PyG, ogb and pyarrow (no Ray, no MLflow). One experiment::

    from plnlp_core import PLNLPConfig, load_ogb, prepare_experiment, resolve_data_root
    from plnlp_core import run_experiment

    config = PLNLPConfig(dataset="ddi", epochs=10)
    split = load_ogb(config.validate(), resolve_data_root(None))
    result = run_experiment(prepare_experiment(config, split))
    print(result.best_epoch, result.best_metrics)

``check_config(config)`` also tries the parts of one's own a config names by
import path (docs/extending.md) on a tiny graph. The names below are
imported when first used (PEP 562), so that importing a
torch-free module such as :mod:`plnlp_core.errors` or :mod:`plnlp_core.config`
does not import torch. Importing it changes nothing outside it: the command
lines' package defers what their processes import and never use
(:mod:`pipelines.runtime.deferred_dynamo`, :mod:`pipelines.runtime.deferred_auc`).
"""
import importlib

_SOURCES = {
    "DATASETS": "plnlp_core.data.datasets",
    "Experiment": "plnlp_core.training.experiment",
    "LinkSplit": "plnlp_core.data.datasets",
    "PLNLPConfig": "plnlp_core.config",
    "PLNLPError": "plnlp_core.errors",
    "build_model": "plnlp_core.assembly",
    "build_sampler": "plnlp_core.assembly",
    "build_training_graph": "plnlp_core.assembly",
    "check_config": "plnlp_core.preflight.checks",
    "fit": "plnlp_core.training.fitting",
    "load_ogb": "plnlp_core.data.ogb_reader",
    "prepare_experiment": "plnlp_core.training.experiment",
    "resolve_data_root": "plnlp_core.data.datasets",
    "run_experiment": "plnlp_core.training.experiment",
}
"""Each public name and the module that defines it."""

__all__ = list(_SOURCES)


def __getattr__(name: str) -> object:
    """The public ``name``, imported from its module on first use."""
    if name not in _SOURCES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_SOURCES[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_SOURCES])
