"""When a run's start-up phases begin: the command's process, or the call."""
import time

import psutil

from components.train.startup import COMMAND, DRIVER_MARKS, mark_command_start
from pipelines.run import main


def test_a_command_starts_when_its_process_was_created():
    mark_command_start()
    assert DRIVER_MARKS == {COMMAND: psutil.Process().create_time()}


def test_a_call_from_python_starts_at_the_call(tmp_path):
    before = time.time()
    assert main(["--dataset", str(tmp_path / "missing.csv"), "--yes"]) == 2
    assert before <= DRIVER_MARKS[COMMAND] <= time.time()
    assert DRIVER_MARKS[COMMAND] > psutil.Process().create_time()
