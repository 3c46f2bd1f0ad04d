"""The start-up phases a run logs once: this command's, never an earlier
one's read back from a checkpoint."""
import pytest

from components.artifacts import TrainArtifact
from components.storage.location import Location
from components.train.startup import DRIVER_MARKS, mark_command_start
from components.train_and_evaluate import first_startup


@pytest.fixture(autouse=True)
def driver_marks():
    """This process's marks, as a command sets them, gone after the test."""
    yield DRIVER_MARKS
    DRIVER_MARKS.clear()


def trained_with(worker_marks: dict[str, float]) -> TrainArtifact:
    return TrainArtifact(Location("/tmp/best"), 1, {}, startup=worker_marks)


def command_marks(start: float) -> None:
    """A command started at ``start`` whose driver phases took 1 s each."""
    mark_command_start(at=start)
    DRIVER_MARKS.update(ray=start + 1, mlflow_run=start + 2, load=start + 3, augment=start + 4)


def test_a_command_s_first_training_logs_each_phase_and_the_total():
    command_marks(1000.0)
    phases = first_startup(trained_with({"workers": 1005.0, "read_split": 1006.0,
                                         "experiment": 1007.0, "model": 1008.0,
                                         "first_epoch": 1010.0}))
    assert phases["startup_to_first_epoch_s"] == 10.0
    assert phases["startup_ray_s"] == 1.0 and phases["startup_first_epoch_s"] == 2.0
    assert first_startup(trained_with({"first_epoch": 1020.0})) == {}  # a later seed's


def test_a_resume_that_trained_nothing_logs_no_start_up_from_the_checkpoint_s_marks():
    """``--resume`` of a run whose newest checkpoint is its last epoch's
    trains no epoch and reads the checkpoint's marks, written by the
    command that trained it: they said -44.5 s to the first epoch."""
    command_marks(2000.0)
    assert first_startup(trained_with({"workers": 1005.0, "first_epoch": 1010.0})) == {}
