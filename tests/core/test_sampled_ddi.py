"""Neighbour-sampled training (``fanouts``) where it matters: on the real
ogbl-ddi it learns as full batch does in the same epochs, and on a graph
whose full-batch step does not fit under a memory cap it still trains."""
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
DDI_EPOCHS = 20
DDI_TOLERANCE = 6.0  # points of test Hits@20

# the memory cap: a power-law graph of 1M nodes and 2M edges, the own `sampled` preset's model
CAP_NODES, CAP_EDGES, CAP_BATCH, CAP_STEPS = 1_000_000, 2_000_000, 1024, 3
CAP_GIB = 1.25


def test_sampled_ddi_cpu_recipe_is_within_a_few_points_of_full_batch_at_the_same_epochs(
        ddi_root):
    """The ddi ``cpu`` preset (SAGE 2x64, MLP 2x64, batches of 65,536,
    evaluated every epoch) for 20 epochs, full batch and with ``fanouts:
    [15, 10]``, everything else equal (seed 0): the sampled run's test
    Hits@20 at its best validation epoch (OGB's protocol) is at most 6
    points below full batch's.

    Measured (2 threads, as this test runs): at 20 epochs full batch 15.14,
    sampled 13.14 (-2.0); at 25, 20.13 against 18.94 (-1.2), which cost
    two more minutes of the suite. With one thread each, seeds 0, 1, 2 at
    25 epochs: full 15.10, 14.11, 21.68 against sampled 15.68, 15.51, 22.79
    (+0.6, +1.4, +1.1); cut at 20 epochs the same pairs differ by -0.4,
    -2.1 and +2.7. At these epochs ddi's test Hits@20 is young and jumpy:
    one seed alone spans 7 points (14.1 to 21.7), and the same three pairs
    cut at 15 to 25 epochs (each cut re-rolls which epoch validation
    picks, as another machine's float order would) differ by -6.0 to +2.7
    (standard deviation 2.7). 6 points covers every gap seen yet stays below one
    mode's seed spread; a sampled run that barely trained lands far under
    it (both ways ranked 2 to 5 % in their first 4 epochs). More epochs are
    no steadier (seed 0 at 45 epochs: 28.5 against 23.4).

    Time: an epoch costs about the same both ways (ddi's 4,267 nodes are
    all seeds of a 65,536-pair batch, so a sampled step encodes every
    node over 15 neighbours instead of about 500, but the MLP over 262,144
    pairs dominates a step, and sampling adds about 0.2 s of a 1.3 s
    step). The two modes train side by side, one thread each (the setting
    of the seed measurements above): 519 s one after the other on two
    threads became 361 s side by side, with other tests running beside
    (full batch 15.10 against sampled 14.67 at 20 epochs, one thread each).
    """
    runs = [subprocess.Popen([sys.executable, "-c", f"from tests.core.test_sampled_ddi import "
                              f"ddi_hits; ddi_hits({str(ddi_root)!r}, {fanouts!r})"],
                             cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True) for fanouts in (None, [15, 10])]
    outputs = [run.communicate(timeout=1500) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], [err[-2000:] for _, err in outputs]
    results = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]
    hits = dict(zip(("full batch", "sampled"), results, strict=True))
    print(f"test Hits@20 after {DDI_EPOCHS} epochs: {hits}")
    assert hits["full batch"] >= 10.0, hits  # full batch learned: not two failures compared
    assert hits["sampled"] >= hits["full batch"] - DDI_TOLERANCE, hits



def ddi_hits(ddi_root: str, fanouts: list[int] | None) -> None:
    """In a child process of one thread: the ddi ``cpu`` preset trained for
    ``DDI_EPOCHS`` with ``fanouts``; prints its test Hits@20 (in points) at
    its best validation epoch."""
    torch.set_num_threads(1)
    split = load_ogb(DATASETS.get("ddi"), Path(ddi_root))
    settings = {**load_preset("ddi", "cpu"), "epochs": DDI_EPOCHS, "fanouts": fanouts}
    config = PLNLPConfig.from_mapping(settings)
    config.validate()
    result = run_experiment(prepare_experiment(config, split))
    print(json.dumps(100 * result.best_metrics["test_hits_20"]))


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
