"""While training, freed large blocks stay in malloc's heap for the next step
instead of going back to the kernel, and afterwards glibc's defaults return;
a malloc the environment tunes is left alone."""
import platform
import resource

import pytest
import torch

from plnlp_core.training.host_allocator import freed_memory_kept, tunable_malloc

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc",
                                reason="mallopt is glibc's")

STEPS = 8
BLOCK = 64 * 2**20 // 4  # floats: 64 MiB, over glibc's largest mmap threshold (32 MiB)


def page_faults_of_steps() -> int:
    """Minor page faults while ``STEPS`` steps each fill and free a 64 MiB tensor."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(STEPS):
        block = torch.ones(BLOCK)
        del block
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


def test_freed_blocks_are_reused_while_training_and_given_back_after():
    pages = BLOCK * 4 // resource.getpagesize()
    assert page_faults_of_steps() >= STEPS * pages * 0.9  # each step maps its block anew
    with freed_memory_kept():
        page_faults_of_steps()  # the heap grows to hold a block
        kept = page_faults_of_steps()
    assert kept <= pages // 4  # then every step reuses the pages freed before it
    assert page_faults_of_steps() >= STEPS * pages * 0.9  # glibc's defaults are back


def test_a_malloc_the_environment_tunes_is_left_alone(monkeypatch):
    assert tunable_malloc() is not None
    monkeypatch.setenv("MALLOC_ARENA_MAX", "2")
    assert tunable_malloc() is None
    monkeypatch.delenv("MALLOC_ARENA_MAX")
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.mmap_max=0")
    assert tunable_malloc() is None
