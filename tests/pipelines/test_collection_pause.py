"""A command's start (a run's, a sweep's) runs without cyclic garbage
collections, and a command's own process freezes what its start made; a
caller's is left as it was."""
import gc

import pytest

import pipelines.run
import pipelines.runtime.services
import pipelines.runtime.sweep
import pipelines.tune
from pipelines.planning.arguments import sweep_request
from pipelines.planning.sweep_plan import plan_sweep
from pipelines.runtime.collection_pause import start_without_collections
from tests.conftest import REPO_ROOT


def collectable(thing: object) -> bool:
    """Whether a collection may walk ``thing``: tracked and not frozen (a
    count of frozen objects would not tell, as other threads of the test
    process free frozen objects, and the test process holds what collecting
    the tests made frozen: :mod:`plnlp_testing.frozen_collection`)."""
    return any(each is thing for each in gc.get_objects())


def test_a_command_s_own_process_freezes_its_start_and_collects_after_it():
    assert gc.isenabled()
    with start_without_collections(own_process=True):
        assert not gc.isenabled()
        made = [[]]
    assert gc.isenabled() and not collectable(made[0])


def test_a_caller_s_process_is_not_frozen():
    with start_without_collections(own_process=False):
        assert not gc.isenabled()
        made = [[]]
    assert gc.isenabled() and collectable(made[0])


def test_a_start_that_fails_freezes_nothing_and_a_paused_collector_stays_paused():
    made = []
    with pytest.raises(ValueError), start_without_collections(own_process=True):
        made.append([])
        raise ValueError("refused")
    assert gc.isenabled() and collectable(made[0])
    gc.disable()
    try:
        with start_without_collections(own_process=True):
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


@pytest.mark.parametrize(("argv", "own_process"), [(None, True), (["--dataset", "ddi"], False)])
def test_only_the_command_line_s_own_run_is_its_process_s(argv, own_process, monkeypatch):
    """``python pipelines/run.py`` calls ``main()``; a test or a notebook
    calls ``main(argv)``, in a process of its own."""
    seen = []

    def launch(request, own_process=False):
        seen.append(own_process)
        raise pipelines.run.RunFailed("stopped here")

    monkeypatch.setattr("sys.argv", ["run.py", "--dataset", "ddi"])
    monkeypatch.setattr(pipelines.run, "launch", launch)
    assert pipelines.run.main(argv) == 1
    assert seen == [own_process]


SWEEP = ["--dataset", "ddi", "--space", str(REPO_ROOT / "tune_spaces" / "ddi.yaml")]


@pytest.mark.parametrize(("argv", "own_process"), [(None, True), (SWEEP, False)])
def test_only_the_sweep_command_line_s_own_sweep_is_its_process_s(argv, own_process, monkeypatch):
    seen = []
    monkeypatch.setattr("sys.argv", ["tune.py", *SWEEP])
    monkeypatch.setattr(pipelines.runtime.sweep, "run_sweep",
                        lambda plan, own_process=False: seen.append(own_process) or 1)
    assert pipelines.tune.main(argv) == 1
    assert seen == [own_process]


def test_a_sweep_s_start_is_paused_and_a_refused_one_stops_there(monkeypatch):
    """The sweep's start (its services, Ray, its modules beside) with the
    collector paused; refused there, the sweep runs no further."""
    paused = []

    def refused(*args, **kwargs):
        paused.append(not gc.isenabled())

    monkeypatch.setattr(pipelines.runtime.services, "prepare", refused)
    plan = plan_sweep(sweep_request(SWEEP))
    assert pipelines.runtime.sweep.run_sweep(plan) == 2
    assert paused == [True] and gc.isenabled()
