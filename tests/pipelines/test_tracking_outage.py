"""A tracking server that goes away in mid-training and comes back: the run
trains on meanwhile and every epoch reaches MLflow once it is back (one
that stays away past the patience: ``tracking-away`` in
tests/pipelines/test_errors.py).

The job's MLflow client is told to give up on a request at once
(``MLFLOW_HTTP_REQUEST_MAX_RETRIES=0``), so that a short outage outlasts
its retries as a 5-minute one outlasts the default's (about 4 minutes);
the product's own retries then carry the run."""

import pytest
from mlflow.tracking import MlflowClient

from plnlp_testing.processes import process_group
from plnlp_testing.tracking_server import TrackingServer
from tests.pipelines.test_errors import (
    logged_epochs,
    printed_epochs,
    run_command,
    wait_until,
)

# short epochs (test_errors.SHORT_EPOCHS): the server may come back after the last one, which
# then waits
EPOCHS = 15


@pytest.mark.slow
def test_a_tracking_server_away_in_mid_training_gets_every_epoch_once_it_is_back(
        ddi_root, tmp_path, suite_ray_address):
    """Stopped at epoch 3 and started again (same database) after the run
    has trained on for a while (or to its end: its last report waits for
    the server): the run, on the suite's Ray, finishes with every epoch once."""
    log = tmp_path / "run.log"
    with TrackingServer(tmp_path / "server") as server:
        server.start()
        argv, env = run_command(ddi_root, tmp_path, server.uri, EPOCHS, suite_ray_address)
        with process_group(argv, env, tmp_path, log) as process:
            wait_until(lambda: printed_epochs(log) >= 3, log, within_s=240)
            server.stop()
            stopped_at = printed_epochs(log)
            wait_until(lambda: "tracking server does not answer" in log.read_text(), log, 60)
            wait_until(lambda: printed_epochs(log) >= stopped_at + 4, log, within_s=60)
            server.start()
            code = process.wait(timeout=300)
        assert code == 0, log.read_text()[-3000:]
        assert "MLflow's tracking server answers again after " in log.read_text()
        client = MlflowClient(server.uri)
        (finished,) = client.search_runs([client.get_experiment_by_name("plnlp-ddi").experiment_id])
        assert finished.info.status == "FINISHED"
        assert logged_epochs(server.uri, finished.info.run_id) == list(range(1, EPOCHS + 1))
        assert "final/test_hits_20" in finished.data.metrics  # logged by the driver, after
