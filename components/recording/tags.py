"""The names a run is tagged and filed under in MLflow, each written once:
the tags PLNLP sets (and those of MLflow's own that it sets or reads), and
the artifacts read back. The metrics' names and their groups are
:mod:`components.recording.metric_names`'. Nothing here imports MLflow, so
a command may name a tag before MLflow loads."""

# MLflow's own tags
PARENT_TAG = "mlflow.parentRunId"  # a nested run's parent (a seed's, a trial's)
DESCRIPTION_TAG = "mlflow.note.content"  # the run page's Description, in Markdown
EXPERIMENT_KIND_TAG = "mlflow.experimentKind"  # see run_lifecycle.mark_training_experiment

# how a run ended, when it did not finish
FAILURE_TAG = "failure_reason"
INTERRUPTED_TAG = "interrupted_at_epoch"  # the epoch ``--resume`` goes on after

# what ``--resume RUN_ID`` finds again from any folder (see run_records.log_sources)
DATASET_TAG = "plnlp.dataset"
DATA_ROOT_TAG = "plnlp.data_root"
WORK_DIR_TAG = "plnlp.work_dir"

# the process that drives a run, and when it was last seen (see driver_presence)
DRIVER_TAG = "plnlp.driver"  # host:pid
DRIVER_SEEN_TAG = "plnlp.driver_seen"  # seconds since the epoch

# a run's training checkpoints while it can go on, removed once it finished
CHECKPOINTS_TAG = "plnlp.checkpoints"
# a sweep's run, while it can go on: where its Ray Tune state lives
TUNE_STATE_TAG = "plnlp.tune_state"

# a sweep's trials (see sweep_tracking)
TRIAL_TAG = "plnlp.trial_id"
OUTCOME_TAG = "plnlp.trial_outcome"
STOPPED_EARLY_TAG = "stopped_early"
BEST_TRIAL_TAG = "best_trial_run_id"

# artifacts that are read back
CONFIG_FILE = "config.yaml"  # every resolved setting of a run (what ``--resume`` reads)
SEARCH_SPACE_FILE = "search_space.yaml"  # a sweep's ``--space`` file

# the registered model's alias on its best version (see models)
CHAMPION = "champion"

# A training report's keys, as the Train worker that reports and the callbacks on Ray
# Train's controller that read it agree (no imports, so that the controller loads
# nothing heavy for it). A report's metrics are the latest epoch's, plus:
EPOCH = "epoch"
"""The epoch a report (and each of its epoch rows) is of; a sweep's
scheduler counts time in it."""
EPOCHS = "epochs"
"""Every epoch since the previous report, one row of metrics each; a
restarted worker's first report adds the epochs its checkpoint holds after
the one Train's controller holds (their reports may have died)."""
WALL_TIME = "wall_time"
"""In an epoch row: when the epoch ended (``time.time()``), MLflow's timestamp."""
FINAL = "final_report"
"""True in a run's last report (its last epoch's): the callbacks see every
epoch into MLflow before they return."""
RESTORED_FROM = "restored_from_epoch"
"""The epoch a restarted run went on from, in its first report."""
