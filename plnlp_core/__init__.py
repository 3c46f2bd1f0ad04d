"""PLNLP, the method: pairwise learning for neural link prediction, with
torch, PyG, ogb and pyarrow (no Ray, no MLflow). One experiment::

    from plnlp_core import DATASETS, PLNLPConfig, build_model, build_training_graph, fit
    from plnlp_core import load_ogb, resolve_data_root

    config = PLNLPConfig(dataset="ddi", epochs=10)
    info = config.validate()
    split = load_ogb(info, resolve_data_root(None))
    model = build_model(config, info, split.num_nodes)
    result = fit(model, config, split, build_training_graph(split, config))
    print(result.best_epoch, result.best_metrics)
"""
from plnlp_core.assembly import build_model, build_sampler, build_training_graph
from plnlp_core.config import PLNLPConfig
from plnlp_core.datasets import DATASETS, LinkSplit, resolve_data_root
from plnlp_core.errors import PLNLPError
from plnlp_core.fitting import fit
from plnlp_core.ogb_reader import load_ogb

__all__ = [
    "DATASETS",
    "LinkSplit",
    "PLNLPConfig",
    "PLNLPError",
    "build_model",
    "build_sampler",
    "build_training_graph",
    "fit",
    "load_ogb",
    "resolve_data_root",
]
