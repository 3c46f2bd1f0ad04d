"""What collecting the tests made, torch's and the test modules' objects
among it, is frozen before the first test runs
(:mod:`plnlp_testing.frozen_collection`), and the collector runs after it."""
import gc
import sys


def test_the_modules_collecting_imported_are_frozen_and_the_collector_runs():
    unfrozen = {id(thing) for thing in gc.get_objects()}
    collected = [sys.modules["torch"].__dict__, sys.modules[__name__].__dict__]
    assert gc.isenabled()
    assert [id(namespace) in unfrozen for namespace in collected] == [False, False]
    assert gc.get_freeze_count() > len(sys.modules)
