"""PLNLP, the method: pairwise learning for neural link prediction, with
torch, PyG, ogb and pyarrow (no Ray, no MLflow). One experiment::

    from plnlp_core import PLNLPConfig, load_ogb, prepare_experiment, resolve_data_root
    from plnlp_core import run_experiment

    config = PLNLPConfig(dataset="ddi", epochs=10)
    split = load_ogb(config.validate(), resolve_data_root(None))
    result = run_experiment(prepare_experiment(config, split))
    print(result.best_epoch, result.best_metrics)
"""
from plnlp_core.assembly import build_model, build_sampler, build_training_graph
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import DATASETS, LinkSplit, resolve_data_root
from plnlp_core.data.ogb_reader import load_ogb
from plnlp_core.errors import PLNLPError
from plnlp_core.experiment import Experiment, prepare_experiment, run_experiment
from plnlp_core.fitting import fit

__all__ = [
    "DATASETS",
    "Experiment",
    "LinkSplit",
    "PLNLPConfig",
    "PLNLPError",
    "build_model",
    "build_sampler",
    "build_training_graph",
    "fit",
    "load_ogb",
    "prepare_experiment",
    "resolve_data_root",
    "run_experiment",
]
