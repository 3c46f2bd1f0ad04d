"""A pytest plugin, loaded before any test module imports torch
(``-p plnlp_testing.shared_cores`` in pyproject.toml's ``addopts``): the
suite's processes share two cores, two pytest workers' worth of them, and
these settings keep one from starving another. Every process the suite
starts inherits them (a command, a Ray and its workers, a cluster).

- ``RAY_worker_niceness=0``: Ray starts its workers at niceness 15, and
  beside the other pytest worker's processes, at 0, a Ray worker got about
  3 % of a core: an in-process sweep took 156 s instead of 18.
- ``OMP_WAIT_POLICY=PASSIVE``: torch's OpenMP threads that wait for work
  sleep instead of spinning. Two ddi smoke trainings side by side, each on
  its Ray's two CPUs, spun each other's cores away: two-batch epochs of
  0.5-2.3 s instead of 0.2-0.4 s, 40-44 s a run instead of 24-26 (AMD
  EPYC, 2 vCPUs). A run alone on the machine is faster spinning (about 1.3
  against 1.5-2.0 s a full-batch epoch), which is why the product leaves
  OpenMP's default (docs/cluster.md)."""
import os

SHARED_CORE_SETTINGS = {"RAY_worker_niceness": "0", "OMP_WAIT_POLICY": "PASSIVE"}

for name, value in SHARED_CORE_SETTINGS.items():
    os.environ.setdefault(name, value)
