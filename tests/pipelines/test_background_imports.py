"""A command's own modules import in a thread while Ray starts
(:mod:`pipelines.runtime.background_imports`), and the services' module
that starts Ray imports neither torch nor PyG itself."""
import importlib.util
import sys
import threading
import time

import pytest

from pipelines.run import JOB_MODULES
from pipelines.runtime.background_imports import imported_beside
from pipelines.runtime.sweep import SWEEP_MODULES
from tests.pipelines.test_command_imports import imported_by

SLOW_MODULE = """
import threading, time
STARTED_IN = threading.current_thread().name
time.sleep({seconds})
FINISHED = True
"""


@pytest.fixture
def module_folder(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [name for name in sys.modules if name.startswith("beside_")]:
        del sys.modules[name]


def write_module(folder, name: str, source: str) -> str:
    (folder / f"{name}.py").write_text(source)
    return name


def test_the_modules_import_in_a_thread_while_the_body_runs_and_are_loaded_after(module_folder):
    # an import of 2 s: the body, which runs at once, finds it unfinished even on a busy machine
    name = write_module(module_folder, "beside_slow", SLOW_MODULE.format(seconds=2.0))
    started = time.monotonic()
    with imported_beside([name]):
        body_ran_after = time.monotonic() - started
        assert not getattr(sys.modules.get(name), "FINISHED", False)
    assert body_ran_after < 1.5  # the body did not wait for the import
    assert sys.modules[name].FINISHED and sys.modules[name].STARTED_IN == "plnlp-imports"
    assert threading.current_thread().name != "plnlp-imports"


def test_a_module_that_fails_to_import_is_left_for_the_command_s_own_import(module_folder):
    name = write_module(module_folder, "beside_broken", "raise ImportError('no such lib')\n")
    with imported_beside([name]):
        pass
    assert name not in sys.modules
    with pytest.raises(ImportError, match="no such lib"):  # where the command imports it
        __import__(name)


def test_an_interrupt_in_the_body_does_not_wait_for_the_imports(module_folder):
    name = write_module(module_folder, "beside_slower", SLOW_MODULE.format(seconds=3))
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt), imported_beside([name]):
        raise KeyboardInterrupt
    assert time.monotonic() - started < 2


def test_a_run_refused_by_its_tracking_server_has_imported_neither_torch_nor_pyg():
    """The tracking store is checked, and Ray started, by a module that
    imports neither (the job's modules load beside Ray's start): a run
    refused there has Ray and MLflow loaded, not torch or PyG."""
    loaded = imported_by("pipelines.run", ["--dataset", "ddi", "--preset", "smoke"],
                         {"MLFLOW_TRACKING_URI": "http://127.0.0.1:9"})
    assert {"ray", "mlflow"} <= set(loaded) and not {"torch", "torch_geometric"} & set(loaded)


@pytest.mark.parametrize("modules", [JOB_MODULES, SWEEP_MODULES], ids=["run", "sweep"])
def test_the_commands_name_modules_that_exist(modules):
    """A module renamed and left here under its old name would fail in the
    thread without a word, and the command would import it after Ray's start."""
    assert [name for name in modules if importlib.util.find_spec(name) is None] == []
