"""The local Ray a run starts when ``RAY_ADDRESS`` is unset: without the
dashboard, unless ``PLNLP_RAY_DASHBOARD=1`` asks for it, and then where it
listens is printed."""
import re
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from tests.conftest import REPO_ROOT
from tests.processes import pipeline_env

pytestmark = pytest.mark.slow

START = ("import logging\n"
         "from pipelines.runtime.ray_cluster import start_local_ray\n"
         "start_local_ray(logging.WARNING)\n"
         "print('started', flush=True)\n"
         "input()\n")


@pytest.mark.parametrize("asked", ["1", ""])
def test_the_dashboard_starts_only_when_asked_and_its_address_is_printed(tmp_path, asked):
    env = pipeline_env(tmp_path, PLNLP_RAY_DASHBOARD=asked)
    with subprocess.Popen([sys.executable, "-c", START], cwd=REPO_ROOT, env=env, text=True,
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, start_new_session=True) as driver:
        lines = []
        for line in driver.stdout:
            lines.append(line)
            if line.startswith("started"):
                break
        shown = re.search(r"Ray dashboard  (http://127\.0\.0\.1:\d+) while this run lasts",
                          "".join(lines))
        if asked:
            assert shown, "".join(lines)
            try:
                with urllib.request.urlopen(f"{shown.group(1)}/api/version", timeout=30):
                    pass
            except urllib.error.HTTPError as answer:  # it listens, behind Ray's token auth
                assert answer.code == 401
        else:
            assert shown is None and "dashboard" not in "".join(lines).lower(), "".join(lines)
        driver.communicate("\n", timeout=60)
    assert driver.returncode == 0
