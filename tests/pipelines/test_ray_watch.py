"""The watch on a running command's Ray: a local GCS that refuses the
connection is gone within seconds; one that is only slow to answer (2
cores running three trainings) is waited for as a cluster's is."""
import time

import pytest

from pipelines.runtime import ray_watch
from pipelines.runtime.ray_cluster import GCS_ANSWERS, GCS_REFUSES, GCS_SILENT


class FakeContext:
    gcs_address = "127.0.0.1:1"


def watched_with(monkeypatch: pytest.MonkeyPatch, states: list[str], seconds: float,
                 local: bool = True) -> list[str]:
    """The reasons the watch failed the run for, given the GCS's answers
    (the last one repeated) during ``seconds``."""
    failed = []
    monkeypatch.setattr(ray_watch, "WATCH_S", 0.01)
    monkeypatch.setattr(ray_watch, "LOCAL_GONE_S", 0.1)
    monkeypatch.setattr(ray_watch, "CLUSTER_GONE_S", 0.6)
    monkeypatch.setattr(ray_watch.ray, "is_initialized", lambda: True)
    monkeypatch.setattr(ray_watch.ray, "get_runtime_context", FakeContext)
    monkeypatch.setenv("RAY_ADDRESS", "" if local else "10.0.0.1:6379")
    answers = iter(states)
    monkeypatch.setattr(ray_watch, "gcs_state", lambda address: next(answers, states[-1]))
    monkeypatch.setattr(ray_watch, "fail_for_a_lost_ray",
                        lambda run_id, reason: failed.append(reason))
    with ray_watch.ray_watched("run", lambda: False):
        time.sleep(seconds)
    return failed


def test_a_local_gcs_that_refuses_the_connection_fails_the_run(monkeypatch):
    failed = watched_with(monkeypatch, [GCS_ANSWERS, GCS_REFUSES], 0.3)
    assert failed and failed[0].startswith("the local Ray's GCS stopped answering")


def test_a_local_gcs_slow_to_answer_is_waited_for(monkeypatch):
    assert watched_with(monkeypatch, [GCS_ANSWERS] + [GCS_SILENT] * 30 + [GCS_ANSWERS], 0.5) == []


def test_a_gcs_silent_past_the_clusters_patience_fails_the_run(monkeypatch):
    assert watched_with(monkeypatch, [GCS_ANSWERS, GCS_SILENT], 0.9)
    failed = watched_with(monkeypatch, [GCS_ANSWERS, GCS_REFUSES], 0.3, local=False)
    assert failed == []  # a cluster's may come back: refused is waited for too
