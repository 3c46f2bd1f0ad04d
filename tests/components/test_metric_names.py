"""What a run logs once is grouped apart from its per-epoch curves."""
import mlflow
import pytest

from components.recording.metric_names import code_name, logged_name, run_metrics
from components.recording.run_records import log_metrics


@pytest.mark.parametrize(("name", "logged"), [
    ("final_test_hits_20", "final/test_hits_20"),
    ("final_valid_mrr_mean", "final/valid_mrr_mean"),
    ("best_final_test_hits_20", "best/final_test_hits_20"),
    ("startup_ray_s", "startup/ray_s"),
    ("best_epoch", "timing/best_epoch"),
    ("fit_seconds", "timing/fit_seconds"),
    ("valid_hits_20", "valid_hits_20"),
    ("train_loss", "train_loss"),
])
def test_one_value_metrics_have_a_group_and_curves_keep_their_names(name: str, logged: str):
    assert logged_name(name) == logged
    assert code_name(logged) == name


def test_a_run_holds_its_one_value_metrics_in_groups_and_reads_them_back(mlflow_store):
    with mlflow.start_run() as run:
        log_metrics({"final_test_hits_20": 0.5, "startup_ray_s": 3.0, "fit_seconds": 9.0})
    held = mlflow.get_run(run.info.run_id).data.metrics
    assert set(held) == {"final/test_hits_20", "startup/ray_s", "timing/fit_seconds"}
    assert run_metrics(held) == {"final_test_hits_20": 0.5, "startup_ray_s": 3.0,
                                 "fit_seconds": 9.0}
