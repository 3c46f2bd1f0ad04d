"""What a training report carries, as the Train worker that reports and the
callbacks on Ray Train's controller that read it agree (no imports, so
that the controller loads nothing heavy for it).

A report's metrics are the latest epoch's, plus:
"""
EPOCH = "epoch"
"""The epoch a report (and each of its epoch rows) is of; a sweep's
scheduler counts time in it."""
EPOCHS = "epochs"
"""Every epoch since the previous report, one row of metrics each; a
restarted worker's first report adds the epochs its checkpoint holds after
the one Train's controller holds (their reports may have died)."""
WALL_TIME = "wall_time"
"""In an epoch row: when the epoch ended (``time.time()``), MLflow's timestamp."""
RESTORED_FROM = "restored_from_epoch"
"""The epoch a restarted run went on from, in its first report."""
