"""The process's environment changed for a block and put back after it."""
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager


@contextmanager
def changed_environment(changes: Mapping[str, str]) -> Iterator[None]:
    """``os.environ`` with ``changes`` for the block; afterwards exactly as
    it was before, whatever the block set or removed."""
    before = dict(os.environ)
    os.environ.update(changes)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(before)
