"""Every use of a part of Ray that is not its public API by the command
lines, in one place, each with what it buys; :func:`missing_parts` names
those an installed release lacks (``tests/pipelines/test_ray_internals.py``
fails with them). pyproject.toml's range holds the releases that have them
all (2.59 and 2.60; CI pins one, ``constraints/ci.txt``); a part that moved
fails that test, not a run.

* ``ray._private.services.ConsolePopen``, swapped while a local Ray starts
  (:func:`own_session_processes`): Ray's processes in a session of their
  own, so that a signal to the command's process group reaches the driver
  alone, which records its runs' end (KILLED, every epoch delivered) before
  it stops Ray: a status made true.
* ``ray._private.authentication``'s ``maybe_enable_token_auth_if_token_available``
  (:func:`send_found_token`): ``ray.init`` sends the token ``ray start``
  left on this machine, as ``ray start`` does; without it a token-started
  head refused the run after 20 s of retries.
* ``ray.core.generated``'s GCS stubs (:func:`ask_cluster_id`): one request
  that tells a GCS that answers from one that is gone or lost within a
  second, where ``ray.init`` retries for 20 s or more.
* ``ray._private.services.resolve_ip_for_localhost``
  (:func:`loopback_as_ray_does`): the same address ``ray.init`` joins.
* ``ray._private.ray_logging``'s stream dispatcher
  (:func:`forwarded_lines_dispatcher`): the console's filter of Ray's
  forwarded worker lines (its info chatter and the tracebacks it goes on
  after); where it is absent the lines pass unfiltered.
* the logger ``TOKEN_NOTICE_LOGGER``: Ray's notice that token
  authentication is on, kept off a command's console unless ``--verbose``.
"""
import importlib
from collections.abc import Iterator
from contextlib import contextmanager

TOKEN_NOTICE_LOGGER = "ray._private.authentication.authentication_token_setup"
PARTS = {
    "ray._private.services": ("ConsolePopen", "resolve_ip_for_localhost"),
    TOKEN_NOTICE_LOGGER: ("maybe_enable_token_auth_if_token_available",),
    "ray.core.generated.gcs_service_pb2": ("GetClusterIdRequest",),
    "ray.core.generated.gcs_service_pb2_grpc": ("NodeInfoGcsServiceStub",),
    "ray._private.ray_logging": ("global_worker_stdstream_dispatcher",),
}
"""Each private module used and the names read from it."""


def missing_parts() -> list[str]:
    """The parts of :data:`PARTS` the installed Ray lacks, as ``module.name``."""
    missing = []
    for module_name, names in PARTS.items():
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            missing += [f"{module_name}.{name}" for name in names]
            continue
        missing += [f"{module_name}.{name}" for name in names if not hasattr(module, name)]
    return missing


@contextmanager
def own_session_processes() -> Iterator[None]:
    """The processes Ray starts in the block (a local node's GCS and raylet,
    and through the raylet its workers), each in a session of its own."""
    from ray._private import services

    popen = services.ConsolePopen

    class OwnSessionPopen(popen):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, start_new_session=True, **kwargs)

    services.ConsolePopen = OwnSessionPopen
    try:
        yield
    finally:
        services.ConsolePopen = popen


def send_found_token() -> None:
    """Has ``ray.init`` send the token found on this machine, as ``ray
    start`` does when ``RAY_AUTH_MODE`` is unset."""
    from ray._private.authentication.authentication_token_setup import (
        maybe_enable_token_auth_if_token_available,
    )

    maybe_enable_token_auth_if_token_available(warn_if_disabled=False)


def ask_cluster_id(address: str, timeout_s: float, metadata: list[tuple[str, str]]) -> None:
    """One ``GetClusterId`` request to the GCS at ``address`` (``host:port``)
    with ``metadata``; raises ``grpc.RpcError`` unless it answers."""
    import grpc
    from ray.core.generated import gcs_service_pb2, gcs_service_pb2_grpc

    with grpc.insecure_channel(address) as channel:
        stub = gcs_service_pb2_grpc.NodeInfoGcsServiceStub(channel)
        stub.GetClusterId(gcs_service_pb2.GetClusterIdRequest(), timeout=timeout_s,
                          metadata=metadata)


def loopback_as_ray_does(host: str) -> str:
    """``ray.init`` joins a loopback address at this machine's IP instead."""
    from ray._private.services import resolve_ip_for_localhost

    return resolve_ip_for_localhost(host)


def forwarded_lines_dispatcher() -> object | None:
    """The dispatcher of the worker lines ``ray.init`` forwards to the
    driver's console, or ``None`` where this Ray has none."""
    try:
        from ray._private.ray_logging import global_worker_stdstream_dispatcher
    except ImportError:
        return None
    return global_worker_stdstream_dispatcher
