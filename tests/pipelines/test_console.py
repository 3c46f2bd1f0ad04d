"""Which lines Ray forwards reach the console: the product's own, and
warnings and errors, not Ray's info chatter nor the tracebacks Ray goes on
after; and Tune's slow-step notes stay off it."""
import logging
from urllib.parse import parse_qs, urlsplit

import pytest

from components.recording.seed_summary import summary_metrics
from pipelines.runtime import console
from pipelines.runtime.console import ForwardedLines, final_lines, keep_line, runs_table_page


@pytest.mark.parametrize("line", [
    "epoch 3/500  loss 0.71341  valid_hits_20 0.0388  test_hits_20 0.0207  (2.4 s)",
    "[lr=0.05-num_neg=3] epoch 3/5  loss 0.71341  valid_hits_20 0.0388  2.4 s  ETA 5s",
    "restarting after epoch 2 from its checkpoint",
    "[lr=0.05-num_neg=3] restarting after epoch 2 from its checkpoint",
    "building load output /cache/stages/load-6a6f",
    "MLflow's tracking server answers again after 40 s; the epochs measured meanwhile are "
    "being logged.",
    "RuntimeError: CUDA out of memory.",
    "Traceback (most recent call last):",
    "WARNING worker.py:1 -- A worker died or was killed",
])
def test_the_products_lines_and_trouble_are_kept(line):
    assert keep_line(line)


@pytest.mark.parametrize("line", [
    "Setting up process group for: env:// [rank=0, world_size=1]",
    "Starting execution of Dataset positives_0354. Full logs are in /tmp/ray",
    "Reporting training result 1: TrainingReport(checkpoint=...)",
    "Requesting resources: {'CPU': 1} * 1",
    "[2026-11-26 E 1 2] core_worker.cc:2465: Actor with class name: 'PreemptionWatcher' and "
    "ID: '85' has constructor arguments in the object store and max_restarts > 0.",
    "execution_options.py:436: RayDeprecationWarning: `ExecutionOptions.exclude_resources` is "
    "deprecated",
])
def test_rays_info_and_benign_notices_are_dropped(line):
    assert not keep_line(line)


CLEANER_TIMEOUT = [  # Train's controller on a loaded machine, which goes on after it
    "2026-11-26 10:00:00,000\tERROR placement_group_callback.py:132 -- Failed to stop "
    "PlacementGroupCleaner gracefully.",
    "Traceback (most recent call last):",
    '  File "ray/train/v2/_internal/callbacks/placement_group_callback.py", line 126, in '
    "_stop_cleaner",
    "    ray.get(self._cleaner.stop.remote(), timeout=self._stop_timeout)",
    '  File "ray/_private/worker.py", line 2961, in get',
    "    raise GetTimeoutError(",
    "ray.exceptions.GetTimeoutError: Get timed out: some object(s) not ready.",
]
WORKER_FAILURE = [
    "2026-11-26 10:00:01,000\tERROR train_worker.py:80 -- training failed",
    "Traceback (most recent call last):",
    '  File "components/train/worker.py", line 70, in train_loop',
    "    raise RuntimeError('CUDA out of memory. Tried to allocate 2.00 GiB')",
    "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB",
]


def batch(lines: list[str], pid: int = 7) -> dict:
    return {"pid": pid, "is_err": True, "actor_name": "TrainController", "lines": lines}


def test_a_traceback_ray_goes_on_after_is_dropped_and_a_real_failure_kept_as_its_error():
    shown = ForwardedLines()(batch([*CLEANER_TIMEOUT, *WORKER_FAILURE, "epoch 3/500  loss 0.7"]))
    assert shown == [WORKER_FAILURE[0], WORKER_FAILURE[-1], "epoch 3/500  loss 0.7"]


def test_a_traceback_cut_between_batches_waits_for_its_end_in_its_own_stream():
    forwarded = ForwardedLines()
    assert forwarded(batch(CLEANER_TIMEOUT[:4])) == []
    assert forwarded(batch(["epoch 1/5  loss 0.9"], pid=8)) == ["epoch 1/5  loss 0.9"]
    assert forwarded(batch([*CLEANER_TIMEOUT[4:], "epoch 2/5  loss 0.8"])) == [
        "epoch 2/5  loss 0.8"]


def test_a_chained_traceback_shows_each_error_once():
    chained = [*WORKER_FAILURE[1:], "", "During handling of the above exception, another "
               "exception occurred:", "", "Traceback (most recent call last):",
               '  File "x.py", line 1, in f', "ValueError: boom"]
    assert ForwardedLines()(batch(chained)) == [WORKER_FAILURE[-1], "ValueError: boom"]


def test_quiet_console_silences_tunes_slow_step_notes_unless_verbose(monkeypatch):
    """(As every pipeline test's run does, it leaves Ray's and MLflow's
    loggers quiet.)"""
    monkeypatch.setattr(console, "_filter_forwarded_lines", lambda pick: None)
    for name in ("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "RAY_COLOR_PREFIX"):
        monkeypatch.setenv(name, "0")  # restored after
    slow = logging.getLogger("ray.tune.utils.util")  # "The `process_trial_save` operation took"
    slow.setLevel(logging.NOTSET)
    console.quiet_console(verbose=True)
    assert slow.isEnabledFor(logging.WARNING)
    console.quiet_console(verbose=False)
    assert not slow.isEnabledFor(logging.WARNING) and slow.isEnabledFor(logging.ERROR)


def query_of(page: str) -> tuple[str, dict[str, list[str]]]:
    """The route and decoded query of a page of MLflow's hash-routed UI."""
    route = urlsplit(page.removeprefix("#"))
    return route.path, parse_qs(route.query)


def test_the_runs_table_link_orders_the_experiments_runs_best_first():
    path, query = query_of(runs_table_page("7", "hits_20"))
    assert path == "/experiments/7/runs"
    assert query == {"workflowType": ["machine_learning"],
                     "orderByKey": ["metrics.`final/valid_hits_20`"], "orderByAsc": ["false"]}


def test_the_sweeps_link_shows_only_its_trials_best_first():
    path, query = query_of(runs_table_page("3", "mrr", parent_run_id="ab12"))
    assert path == "/experiments/3/runs"
    assert query == {"workflowType": ["machine_learning"],
                     "searchFilter": ["tags.`mlflow.parentRunId` = 'ab12'"],
                     "orderByKey": ["metrics.`final/valid_mrr`"], "orderByAsc": ["false"]}
    assert " " not in runs_table_page("3", "mrr", parent_run_id="ab12")  # one word to a terminal


def test_a_multi_seed_runs_final_lines_show_each_mean_beside_its_spread():
    summary = summary_metrics([{"final_test_hits_100": 0.88, "final_test_auc": 0.96},
                               {"final_test_hits_100": 0.90, "final_test_auc": 0.97},
                               {"final_test_hits_100": 0.86, "final_test_auc": 0.95}])
    assert final_lines(summary) == [
        "  final test     auc 0.9600 +- 0.0100  hits_100 0.8800 +- 0.0200"]
