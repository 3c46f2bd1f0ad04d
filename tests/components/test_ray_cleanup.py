"""Ray's clean-up calls after an interrupt are given seconds each, and once
one goes unanswered the later ones are not made."""
import threading
import time

import pytest

from components import ray_cleanup


@pytest.fixture(autouse=True)
def fresh_cleanup():
    ray_cleanup.begin()
    yield
    ray_cleanup.begin()


def test_a_call_that_returns_in_time_is_made_and_its_error_raised_here():
    made = []
    assert ray_cleanup.cleaned_up(lambda: made.append(1), seconds=5)
    assert made == [1] and ray_cleanup.ray_answers()
    with pytest.raises(ValueError, match="gone"):
        ray_cleanup.cleaned_up(lambda: (_ for _ in ()).throw(ValueError("gone")), seconds=5)


def test_an_unanswered_call_is_left_and_the_later_ones_are_not_made():
    release = threading.Event()
    started = time.monotonic()
    assert not ray_cleanup.cleaned_up(release.wait, seconds=0.2)
    assert time.monotonic() - started < 2
    made = []
    assert not ray_cleanup.cleaned_up(lambda: made.append(1))
    assert made == [] and not ray_cleanup.ray_answers()
    release.set()
    ray_cleanup.begin()  # the next interrupt tries again
    assert ray_cleanup.cleaned_up(lambda: made.append(1)) and made == [1]
