"""Train -> MLflow: every epoch of a training run, logged from Ray Train's
controller as reports reach it."""
import time

import ray.train

from components.recording.names import EPOCHS, RESTORED_FROM, WALL_TIME

MLFLOW_BATCH = 1000  # metrics MLflow takes in one log_batch


class EpochLogger(ray.train.UserCallback):
    """Logs each epoch to an MLflow run from Ray Train's controller, once
    the report that carries it has reached the controller, stamped with the
    time the epoch ended. A report lost with a dying worker is never logged:
    the restarted worker reports again the epochs after the checkpoint the
    controller holds, those of the checkpoint it goes on from and those it
    trains again. Epochs MLflow already holds (a run that goes on with
    ``--resume``, or epochs reported after the checkpoint a restart went
    back to) are not logged twice.

    Args:
        tracking_uri (str): The MLflow tracking URI.
        run_id (str): The run to log to.
    """

    def __init__(self, tracking_uri: str, run_id: str) -> None:
        self.tracking_uri = tracking_uri
        self.run_id = run_id
        self.logged_through: int | None = None

    def after_report(
        self, run_context: object, metrics: list[dict], checkpoint: ray.train.Checkpoint | None,
    ) -> None:
        # MLflow loads here, not with the module: Ray Train's controller
        # unpickles this callback before it starts the workers, and importing
        # MLflow there would delay them by a second and a half.
        from mlflow.entities import Metric
        from mlflow.tracking import MlflowClient

        client = MlflowClient(self.tracking_uri)
        if self.logged_through is None:
            logged = client.get_metric_history(self.run_id, "train_loss")
            self.logged_through = max((m.step for m in logged), default=0)
        report = metrics[0]  # rank 0's: the only one that carries epochs
        now = int(time.time() * 1000)
        rows = [row for row in report.get(EPOCHS, []) if row["epoch"] > self.logged_through]
        logged = [Metric(key, float(value), int(row[WALL_TIME] * 1000), int(row["epoch"]))
                  for row in rows for key, value in row.items() if key not in ("epoch", WALL_TIME)]
        if RESTORED_FROM in report:
            epoch = int(report[RESTORED_FROM])
            logged.append(Metric(RESTORED_FROM, epoch, now, epoch))
        for start in range(0, len(logged), MLFLOW_BATCH):
            client.log_batch(self.run_id, metrics=logged[start:start + MLFLOW_BATCH])
        self.logged_through = max([self.logged_through, *(int(r["epoch"]) for r in rows)])
