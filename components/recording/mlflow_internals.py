"""Every use of a part of MLflow that is not its public API, in one place,
each with what it buys; :func:`missing_parts` names those an installed
release lacks (``tests/components/test_mlflow_internals.py`` fails with them).

* ``mlflow.tracking.fluent._active_run_stack``: MLflow keeps each thread's
  active runs apart, and no public call reads another thread's. An
  interrupt's watcher thread reads the main thread's innermost run with it,
  so that a Ctrl-C that arrives while the main thread waits in Ray's native
  code still marks the right run KILLED (a status made true, not seconds).
"""
import threading

import mlflow

ACTIVE_RUN_STACK = "mlflow.tracking.fluent._active_run_stack"


def thread_run_id(thread: threading.Thread) -> str | None:
    """The innermost active run's id of ``thread`` (``None``: none), read
    from any thread."""
    stacks = mlflow.tracking.fluent._active_run_stack.get_all_thread_values()
    stack = stacks.get(thread.ident) or []
    return stack[-1].info.run_id if stack else None


def missing_parts() -> list[str]:
    """The private parts used here that the installed MLflow lacks."""
    stack = getattr(mlflow.tracking.fluent, "_active_run_stack", None)
    return [] if hasattr(stack, "get_all_thread_values") else [ACTIVE_RUN_STACK]
