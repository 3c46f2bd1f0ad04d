"""An object store that stops answering in mid-run and comes back: the run
waits for it and finishes (how long it waits: ``store_retries``, and
tests/components/test_storage.py for an outage past the patience)."""
import time

import pytest
from mlflow.tracking import MlflowClient

from tests.object_store import PausableProxy, make_bucket, s3_env, s3_server
from tests.pipelines.test_errors import only_run, printed_epochs, smoke_command, wait_until
from tests.processes import process_group

EPOCHS, OUTAGE_S = 12, 30


@pytest.mark.slow
def test_a_store_away_for_30_s_in_mid_training_is_waited_for_and_the_run_finishes(
        ddi_root, tmp_path):
    """ddi ``smoke`` with its work folder in a bucket and a checkpoint every
    epoch: the store's endpoint refuses every connection for 30 s from
    epoch 3 on. The checkpoint writes wait for it (training stalls rather
    than fails), and the run finishes with every epoch once."""
    with s3_server(tmp_path) as endpoint:
        make_bucket(endpoint, "work")
        proxy = PausableProxy(endpoint)
        proxy.up()
        argv, env, database = smoke_command(ddi_root, tmp_path, f"epochs={EPOCHS}",
                                            "max_batches_per_epoch=2", "checkpoint_every=1")
        env.update(s3_env(proxy.url))
        log = tmp_path / "run.log"
        with process_group([*argv, "--work-dir", "s3://work/plnlp"], env, tmp_path,
                           log) as process:
            wait_until(lambda: printed_epochs(log) >= 3, log, within_s=240)
            proxy.down()
            at_outage = printed_epochs(log)
            time.sleep(OUTAGE_S)
            during = printed_epochs(log)
            proxy.up()
            code = process.wait(timeout=300)
    output = log.read_text()
    assert code == 0, output[-3000:]
    assert during <= at_outage + 2 < EPOCHS, output[-3000:]  # it waited for the store
    run = only_run(f"sqlite:///{database}")
    assert run.info.status == "FINISHED"
    logged = MlflowClient(f"sqlite:///{database}").get_metric_history(run.info.run_id,
                                                                      "train_loss")
    assert sorted(m.step for m in logged) == list(range(1, EPOCHS + 1))
