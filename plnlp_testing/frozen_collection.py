"""A pytest plugin: the tests are collected with CPython's cyclic garbage
collector paused, and what collecting them made is frozen (:func:`gc.freeze`)
so that no later collection walks it.

Collecting imports torch, PyG, MLflow, Ray and every test module: the
modules' objects, kept until the session ends, are most of the process's.
Each full collection walks every object not frozen: those while the tests
are collected, those after, and the five that pytest's check for unraisable
exceptions runs at the session's end. The
fast tier's ``pytest -m "not slow" tests/core tests/components`` in one
process spent 5.8 of its 50.3 CPU-s in full collections, 1.8 of 46.2 with
this plugin (Intel Xeon, 2 vCPUs, Debian's Python 3.11)."""
import pytest

from pipelines.runtime.collection_pause import start_without_collections


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> object:
    with start_without_collections(own_process=True):
        return (yield)
