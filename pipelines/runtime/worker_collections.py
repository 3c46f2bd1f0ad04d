"""Imported by each worker of the Ray a command starts, as the worker starts
(Ray's ``preload_python_modules``): full garbage collections ten times rarer.

A worker's first task or actor imports torch, PyG, Ray Train and the stages:
hundreds of thousands of objects, kept for the worker's life. CPython runs a
full collection once ten collections of the middle generation have passed
and the objects that outlived them have grown by a quarter, and each full
collection walks every object made so far. A training actor's imports ran
seven of them, 0.71 CPU-s; with a full collection after a hundred middle
ones, one (0.01 CPU-s). Importing the actor's module after Ray took 2.8 to
3.1 CPU-s against 3.6 to 4.1 (five runs each; Intel Xeon, 2 vCPUs, Debian's
Python 3.11). Ray Serve raises its proxies' thresholds for the same reason.

The young generations are collected as often as before, so a cycle made and
dropped within a step is freed as soon as before; only cycles that outlive
two young collections wait longer for theirs.
"""
import gc

FULL_COLLECTION_THRESHOLD = 100  # CPython's default: 10


def collect_in_full_less_often() -> None:
    """Sets the full collection's threshold to
    :data:`FULL_COLLECTION_THRESHOLD`, keeping the young generations'."""
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_COLLECTION_THRESHOLD)


collect_in_full_less_often()
