"""Which lines Ray forwards reach the console: the product's own, and
warnings and errors, not Ray's info chatter."""
import pytest

from pipelines.console import keep_line


@pytest.mark.parametrize("line", [
    "epoch 3/500  loss 0.71341  valid_hits_20 0.0388  test_hits_20 0.0207  (2.4 s)",
    "restarting after epoch 2 from its checkpoint",
    "building load output /cache/stages/load-6a6f",
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
