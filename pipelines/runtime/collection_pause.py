"""A command's start with CPython's cyclic garbage collector paused.

A command starts by importing MLflow, Ray, torch, PyG and the job's stages:
hundreds of thousands of objects, nearly all of them kept for the process's
life, and each full collection walks every object made so far, during the
start and after it. A ddi ``smoke`` driver joined to a running Ray spent 1.6
of its 7 to 8.6 CPU-seconds in the collector; with the collector paused for
its start and what the start made frozen, 0.16 of 5.3 to 6.0 (Intel Xeon, 2
vCPUs, Debian's Python 3.11, three runs each).
"""
import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def start_without_collections(own_process: bool) -> Iterator[None]:
    """The cyclic garbage collector off in the body. At its end, in a
    command's ``own_process``, every object made so far goes to the
    permanent generation (:func:`gc.freeze`), which no collection walks:
    the modules and the services' clients, kept until the process ends. A
    caller's process (a notebook's, a test's) is left unfrozen, as its
    objects are its own. The collector then runs as it did before."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
        if own_process:
            gc.freeze()
    finally:
        if enabled:
            gc.enable()
