"""Modules a command imports in a thread while its main thread waits on
something else: Ray's start, which mostly waits on the processes it
launches (its GCS, raylet and agents), while a driver's imports of torch,
PyG and the stages are work for a CPU of their own."""
import contextlib
import importlib
import threading
from collections.abc import Iterator, Sequence


@contextlib.contextmanager
def imported_beside(modules: Sequence[str]) -> Iterator[None]:
    """Imports ``modules`` in a thread while the body runs, and waits for
    them when it ends, so that the command's next import finds them loaded:
    about 3 s off a command's start on 2 cores (a local Ray's start, 4.5 s,
    beside the job's imports, 6 s, instead of after them). An interrupt in
    the body does not wait (its clean-up starts at once). A module that fails
    to import here is left out of ``sys.modules`` and fails again, with its
    traceback, where the command imports it."""
    thread = threading.Thread(target=import_all, args=(tuple(modules),),
                              name="plnlp-imports", daemon=True)
    thread.start()
    try:
        yield
    except KeyboardInterrupt:
        raise
    except BaseException:
        thread.join()
        raise
    thread.join()


def import_all(modules: tuple[str, ...]) -> None:
    for name in modules:
        with contextlib.suppress(Exception):
            importlib.import_module(name)
