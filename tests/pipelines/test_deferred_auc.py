"""OGB's link ``Evaluator`` imports scikit-learn's metrics at its first
ROC-AUC, not with itself (:mod:`pipelines.runtime.deferred_auc`)."""
import importlib.util
import subprocess
import sys

import ogb.linkproppred
import pytest
import torch

from pipelines.runtime.deferred_auc import METRICS, MODULE, DeferredAUC, roc_auc_score
from tests.conftest import REPO_ROOT

SCORES = {"y_pred_pos": torch.tensor([0.9, 0.8, 0.3]), "y_pred_neg": torch.tensor([0.1, 0.85])}


def test_ogbs_evaluator_runs_without_sklearn_metrics_until_a_roc_auc(monkeypatch):
    """Run afresh while ``sklearn.metrics`` is not imported: Hits@K needs no
    scikit-learn, and ogbl-vessel's ROC-AUC imports it and is its value."""
    monkeypatch.delitem(sys.modules, METRICS, raising=False)
    spec = DeferredAUC().find_spec(MODULE, ogb.linkproppred.__path__)
    evaluate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(evaluate)
    assert evaluate.roc_auc_score is roc_auc_score and METRICS not in sys.modules
    hits = evaluate.Evaluator("ogbl-ddi").eval({**SCORES, "y_pred_neg": torch.rand(30)})
    assert set(hits) == {"hits@20"} and METRICS not in sys.modules
    auc = evaluate.Evaluator("ogbl-vessel").eval(SCORES)["rocauc"]
    metrics = sys.modules[METRICS]  # scikit-learn's own, imported by the call
    assert auc == pytest.approx(metrics.roc_auc_score([1, 1, 1, 0, 0],
                                                      [0.9, 0.8, 0.3, 0.1, 0.85]))
    assert metrics.f1_score([1, 0], [1, 0]) == 1.0


def test_a_module_that_imported_sklearn_metrics_first_runs_ogbs_as_usual():
    import sklearn.metrics

    spec = DeferredAUC().find_spec(MODULE, ogb.linkproppred.__path__)
    evaluate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(evaluate)
    assert evaluate.roc_auc_score is sklearn.metrics.roc_auc_score


@pytest.mark.slow  # a fresh process importing torch, PyG and OGB: about 3 CPU-s
def test_a_command_line_defers_sklearn_metrics_in_a_fresh_process():
    done = subprocess.run([sys.executable, "-c", f"""
import sys
import pipelines
from ogb.linkproppred import Evaluator
assert Evaluator("ogbl-collab").K == 50
assert {METRICS!r} not in sys.modules
"""], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
