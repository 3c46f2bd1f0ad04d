"""Ray's private parts the command lines use, all in
``pipelines/runtime/ray_internals.py``: present in the installed release,
and doing what the product counts on."""
import subprocess
import sys

import ray

from pipelines.runtime import ray_internals


def test_the_installed_ray_has_every_private_part_used():
    missing = ray_internals.missing_parts()
    assert missing == [], (
        f"the installed Ray {ray.__version__} lacks {', '.join(missing)}, which "
        "pipelines/runtime/ray_internals.py uses; pin a release that has them or replace them")


def test_a_missing_part_is_named():
    parts = {**ray_internals.PARTS, "ray._private.services": ("ConsolePopen", "gone_in_ray_9")}
    original, ray_internals.PARTS = ray_internals.PARTS, parts
    try:
        assert ray_internals.missing_parts() == ["ray._private.services.gone_in_ray_9"]
    finally:
        ray_internals.PARTS = original


def test_processes_started_in_the_block_get_a_session_of_their_own():
    from ray._private import services

    before = services.ConsolePopen
    with ray_internals.own_session_processes():
        child = services.ConsolePopen([sys.executable, "-c", "import os; print(os.getsid(0))"],
                                      stdout=subprocess.PIPE)
        session = int(child.communicate()[0])
    assert session == child.pid  # the child leads a session of its own
    assert services.ConsolePopen is before


def test_a_loopback_address_is_joined_at_this_machines_ip():
    assert ray_internals.loopback_as_ray_does("127.0.0.1") == ray.util.get_node_ip_address()
