"""Neighbour-sampled training (``fanouts``) where it matters: on the real
ogbl-ddi it learns as full batch does in the same epochs, and on a graph
whose full-batch step does not fit under a memory cap it still trains."""
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from pipelines.planning.presets import load_preset
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import DATASETS
from plnlp_core.data.ogb_reader import load_ogb
from plnlp_core.training.experiment import prepare_experiment, run_experiment

pytestmark = pytest.mark.slow

REPO_ROOT = Path(__file__).resolve().parents[2]

# the ddi comparison: see the test's docstring for what these were measured at
DDI_EPOCHS = 5
AUC_TOLERANCE = 0.015  # of test AUC: sampled at most this far below full batch
FULL_BATCH_AUC_FLOOR = 0.92  # full batch learned, not two failures compared

# the memory cap: a power-law graph of 1M nodes and 2M edges, the own `sampled` preset's model
CAP_NODES, CAP_EDGES, CAP_BATCH, CAP_STEPS = 1_000_000, 2_000_000, 1024, 3
CAP_GIB = 1.25


def test_sampled_ddi_cpu_recipe_ranks_test_pairs_as_well_as_full_batch_at_the_same_epochs(
        ddi_root):
    """The ddi ``cpu`` preset (SAGE 2x64, MLP 2x64, batches of 65,536) for
    5 epochs, full batch and with ``fanouts: [15, 10]``, everything else
    equal (seed 0): after the last epoch, the sampled run's test AUC (the
    fraction of ddi's test positive-negative pairs ranked right, the
    quantity the ``auc`` loss stands in for) is at most 0.015 below full
    batch's, and full batch's is at least 0.92. Each run's test Hits@20 at
    its best validation epoch (OGB's protocol) is printed beside.

    Measured, seeds 0-3, one thread each, side by side, as this test runs;
    test AUC after each epoch:

    - 2026-12-06 (Intel Xeon), epochs 1 to 6: full batch 0.870 to 0.880
      after one, 0.908 to 0.922 after three, 0.922 to 0.930 after four,
      0.933 to 0.942 after five; sampled minus full batch between -0.0051
      and +0.0004 after five, -0.0086 to +0.0004 at any of epochs 4 to 6.
    - 2026-12-05 (AMD EPYC), epochs 1 to 14: sampled minus full batch
      between -0.0083 and +0.0004 at each of epochs 4 to 14 (sampled trails
      by at most about one epoch's gain).

    0.015 is about twice the widest gap. A sampled run two epochs behind
    (its AUC after three) fails it by 0.005 to 0.017 on every seed, three
    behind by about 0.03: an epoch gains 0.008 to 0.030 in epochs 3 to 5,
    against 0.003 to 0.012 in epochs 4 to 8, so five epochs tell a run that
    trains slower apart better than eight did (three behind failed those by
    0.008 to 0.011). Full batch's floor of 0.92 sits below its four seeds after
    five epochs (0.933 at least) and at what three to four give.

    Why AUC and not Hits@20, ddi's leaderboard metric: at these epochs ddi's
    test Hits@20 is young and jumpy. Full batch gave 2.6 to 13.3 after
    eight epochs and 5.7 to 13.6 after ten, one epoch moving it by up to 8
    points; at 20 epochs (this test's first form, within 6 points) the
    seeds' full batch spanned 9.8 to 16.7, and a sampled run left untrained
    (2 to 5) would have passed at 12. AUC moves by about 0.01 between seeds.

    Time: an epoch costs about the same both ways, 4.6 CPU-seconds on one
    thread full batch and 3.9 sampled, evaluation included (ddi's 4,267
    nodes are all seeds of a 65,536-pair batch, so a sampled step encodes
    every node over 15 neighbours instead of about 500, but the MLP over the
    pairs dominates a step). The two train side by side, one thread each:
    about 30 s a pair on a quiet machine (40 s at eight epochs, 152 to
    195 s at 20 before freed memory was kept for the next step).
    """
    runs = [subprocess.Popen([sys.executable, "-c", f"from tests.core.test_sampled_ddi import "
                              f"ddi_metrics; ddi_metrics({str(ddi_root)!r}, {fanouts!r})"],
                             cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True) for fanouts in (None, [15, 10])]
    outputs = [run.communicate(timeout=900) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], [err[-2000:] for _, err in outputs]
    results = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]
    full, sampled = results
    print(f"after {DDI_EPOCHS} epochs: full batch {full}, sampled {sampled}")
    assert full["test_auc"] >= FULL_BATCH_AUC_FLOOR, full
    assert sampled["test_auc"] >= full["test_auc"] - AUC_TOLERANCE, (full, sampled)


def ddi_metrics(ddi_root: str, fanouts: list[int] | None) -> None:
    """In a child process of one thread: the ddi ``cpu`` preset trained for
    ``DDI_EPOCHS`` with ``fanouts``, evaluated each epoch with AUC beside
    ddi's Hits@K; prints, as JSON, its test AUC after the last epoch and its
    test Hits@20 (in points) at its best validation epoch."""
    torch.set_num_threads(1)
    split = load_ogb(DATASETS.get("ddi"), Path(ddi_root))
    split.info = dataclasses.replace(split.info, extra_metrics=("auc",))
    settings = {**load_preset("ddi", "cpu"), "epochs": DDI_EPOCHS, "fanouts": fanouts}
    config = PLNLPConfig.from_mapping(settings)
    config.validate()
    result = run_experiment(prepare_experiment(config, split))
    print(json.dumps({"test_auc": result.history[-1].metrics["test_auc"],
                      "test_hits_20": 100 * result.best_metrics["test_hits_20"]}))


def capped_steps(mode: str) -> None:
    """In a child process: builds the power-law graph, the model and its
    optimiser, caps the process's data segment at ``CAP_GIB`` past what they
    hold, then takes ``CAP_STEPS`` steps of ``mode``; prints how many steps
    it took and the error that stopped it, as JSON."""
    from benchmarks.bench_sampling import cap_data_segment, memory_kib, power_law_edges
    from plnlp_core.assembly import build_model, build_negative_sampler, build_optimizer
    from plnlp_core.data.datasets import DatasetInfo
    from plnlp_core.edge_set import EdgeSet
    from plnlp_core.graph import build_adjacency
    from plnlp_core.sampling.neighbors import NeighborSampler
    from plnlp_core.training.epoch import StepOptions, draw_batch, sampled_batch, train_step

    torch.set_num_threads(2)
    edges = power_law_edges(CAP_EDGES, CAP_NODES)
    adj, degree = build_adjacency(edges, CAP_NODES)
    settings = {**load_preset("own", "sampled"), "dataset": "powerlaw", "batch_size": CAP_BATCH}
    if mode == "full batch":
        settings["fanouts"] = None
    config = PLNLPConfig.from_mapping(settings)
    info = DatasetInfo("powerlaw", "powerlaw", "auc", False, 0)
    model = build_model(config, info, CAP_NODES)
    optimizer = build_optimizer(model, config)
    sampler = build_negative_sampler(config, EdgeSet.from_csr(adj, undirected=True), degree)
    neighbors = None if config.fanouts is None else NeighborSampler(adj, config.fanouts)
    options = StepOptions.from_config(config)
    generator = torch.Generator().manual_seed(0)
    cap_data_segment(memory_kib("VmData") / 2**20 + CAP_GIB)  # VmData: what RLIMIT_DATA counts
    steps, error = 0, None
    try:
        for _ in range(CAP_STEPS):
            index = torch.randint(edges.size(0), (config.batch_size,), generator=generator)
            batch = draw_batch(edges[index], None, sampler, config.num_neg, "shared", generator)
            graph = adj
            if neighbors is not None:
                batch, graph = sampled_batch(batch, neighbors, generator)
            train_step(model, optimizer, None, graph, batch, options)
            steps += 1
    except (MemoryError, RuntimeError) as caught:
        error = f"{type(caught).__name__}: {caught}"
    print(json.dumps({"steps": steps, "error": error}))


def run_capped(mode: str) -> tuple[int, dict | None, str]:
    code = f"from tests.core.test_sampled_ddi import capped_steps; capped_steps({mode!r})"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=300)
    lines = done.stdout.strip().splitlines()
    report = json.loads(lines[-1]) if done.returncode == 0 and lines else None
    return done.returncode, report, done.stderr[-2000:]


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc (Linux)")
def test_under_a_memory_cap_full_batch_fails_and_sampled_training_steps():
    """A power-law graph (``benchmarks/bench_sampling.py``'s generator) of
    1M nodes and 2M edges, the own ``sampled`` preset's model (SAGE 2x64
    over a 64-wide embedding, MLP 2x64), batches of 1,024 positives both
    ways, each in a process of its own whose data segment is capped at
    1.25 GiB past what the graph, the model and the optimiser already hold.

    The cap is ``RLIMIT_DATA``, not ``RLIMIT_AS``: it counts the private
    writable memory a process maps (every tensor), not address space merely
    reserved (glibc's malloc arenas reserve 64 MiB a thread, so an
    address-space cap would move with the machine's core count), and an
    allocation past it fails at once with ENOMEM (torch's "can't allocate
    memory"), with no OOM killer involved and nothing past the cap ever
    touched. Measured uncapped (2 threads): a full-batch step grows the data
    segment by about 2 GiB (it failed under a 1.9 GiB cap and passed under
    2.2 GiB): it encodes all 1M nodes, their dense embedding gradient and
    the dense Adam moments. A sampled step grows it by 0.76 GiB (it passed
    under 0.85 GiB): SparseAdam's two moment tables (0.5 GiB) and the
    sampled neighbourhoods of about 4,000 seeds. 1.25 GiB sits about 1.5x
    from each. 45 s for both processes on 2 cores shared with two training
    runs."""
    code, report, stderr = run_capped("full batch")
    out_of_memory = code in (-6, -9) or (report is not None and report["steps"] == 0 and any(
        text in (report["error"] or "") for text in ("can't allocate", "MemoryError",
                                                     "not enough memory")))
    assert out_of_memory, (code, report, stderr)
    code, report, stderr = run_capped("sampled")
    assert code == 0 and report == {"steps": CAP_STEPS, "error": None}, (code, report, stderr)
