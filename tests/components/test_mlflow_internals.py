"""MLflow's private parts the product uses, all in
``components/recording/mlflow_internals.py``: present in the installed
release, and read as the product reads them."""
import threading

import mlflow

from components.recording.mlflow_internals import missing_parts, thread_run_id


def test_the_installed_mlflow_has_every_private_part_used():
    assert missing_parts() == [], (
        f"the installed MLflow {mlflow.__version__} lacks {', '.join(missing_parts())}, which "
        "components/recording/mlflow_internals.py uses; pin a release that has it or replace it")


def test_another_thread_reads_the_main_threads_innermost_run(mlflow_store):
    seen = {}
    with mlflow.start_run() as outer, mlflow.start_run(nested=True) as inner:
        watcher = threading.Thread(target=lambda: seen.update(
            main=thread_run_id(threading.main_thread()),
            own=thread_run_id(threading.current_thread())))
        watcher.start()
        watcher.join()
    assert seen == {"main": inner.info.run_id, "own": None}
    assert outer.info.run_id != inner.info.run_id
