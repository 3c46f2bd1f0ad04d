"""Data-parallel training: two DDP workers, each stepping on its shard of a
global batch, end with the same parameters as one worker stepping on the
whole batch (train_step scales the local sum by world_size and adds L2 once)."""
import datetime
import faulthandler
import os
import time
import traceback
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel

from plnlp_core.assembly import build_model, build_optimizer
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import DATASETS
from plnlp_core.graph import build_adjacency
from plnlp_core.sampling.neighbors import NeighborSampler
from plnlp_core.training.epoch import PairBatch, StepOptions, sampled_batch, train_step

NUM_NODES = 16
# dropout 0 so both runs compute the same forward pass; an MLP predictor so
# that gradients flow through every kind of parameter
CONFIG = PLNLPConfig(encoder="sage", embedding_dim=8, hidden_channels=8, encoder_layers=2,
                     predictor="mlp", predictor_hidden=8, predictor_layers=2, dropout=0.0,
                     loss="weighted_hinge_auc", walk_length=2, num_neg=3)
SAMPLED = CONFIG.replace(fanouts=(2, 2))
"""The same model trained on sampled neighbourhoods: a sparse embedding."""
L2 = 0.01
LR = 0.1
CLIPS = (None, 0.05)
"""The DDP steps' gradient clipping: none, and a norm far below these gradients'."""
# a worker that is stuck this long dumps its stack to rank<r>.err and exits
WORKER_TIMEOUT_S = 150


def graph_edges() -> torch.Tensor:
    ring = [[i, (i + 1) % NUM_NODES] for i in range(NUM_NODES)]
    chords = [[i, (i + 5) % NUM_NODES] for i in range(0, NUM_NODES, 2)]
    return torch.tensor(ring + chords)


def shard_batches() -> list[PairBatch]:
    """Two shard batches of 5 and 3 positives, each with its own negatives
    shared num_neg ways within the shard."""
    generator = torch.Generator().manual_seed(7)
    shards = []
    for m in (5, 3):
        pos = torch.randint(NUM_NODES, (m, 2), generator=generator)
        neg = torch.randint(NUM_NODES, (m, 2), generator=generator)
        weight = torch.rand(m, generator=generator) + 0.5
        index = torch.stack([torch.arange(m)] + [torch.randperm(m, generator=generator)
                                                  for _ in range(CONFIG.num_neg - 1)], dim=-1)
        shards.append(PairBatch(pos, weight, neg, index))
    return shards


def global_batch(shards: list[PairBatch]) -> PairBatch:
    """The concatenation of the shards; shard 1's index is offset by shard
    0's m so it points at the same negatives."""
    offset = shards[0].pos.size(0)
    return PairBatch(
        torch.cat([s.pos for s in shards]), torch.cat([s.weight for s in shards]),
        torch.cat([s.neg for s in shards]),
        torch.cat([shards[0].neg_index, shards[1].neg_index + offset]),
    )


def one_step(model: torch.nn.Module, batch: PairBatch, world_size: int,
             clip: float | None = None) -> float:
    adj, _ = build_adjacency(graph_edges(), NUM_NODES)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    options = StepOptions.from_config(CONFIG.replace(l2=L2, clip_grad_norm=clip), world_size)
    return train_step(model, optimizer, None, adj, batch, options)


def fresh_model(initial: Path, config: PLNLPConfig = CONFIG) -> torch.nn.Module:
    model = build_model(config, DATASETS.get("ddi"), NUM_NODES)
    model.load_state_dict(torch.load(initial, weights_only=True))
    return model


def sampled_steps(model: torch.nn.Module, rank: int, world_size: int) -> None:
    """Three neighbour-sampled steps on this worker's shard, each with its
    own sampled neighbourhood, the embedding rows updated by SparseAdam."""
    config = SAMPLED.replace(l2=L2)
    adj, _ = build_adjacency(graph_edges(), NUM_NODES)
    neighbors = NeighborSampler(adj, list(config.fanouts))
    optimizer = build_optimizer(model, config)
    options = StepOptions.from_config(config, world_size)
    generator = torch.Generator().manual_seed(rank)
    for _ in range(3):
        batch, subgraph = sampled_batch(shard_batches()[rank], neighbors, generator)
        train_step(model, optimizer, None, subgraph, batch, options)


def stepped(folder: Path, rank: int, case: object) -> Path:
    """Where worker ``rank`` saves its model's parameters after ``case``
    (a clip of :data:`CLIPS`, or ``"sampled"``)."""
    return folder / f"rank{rank}-{case}.pt"


def worker(rank: int, world_size: int, port: int, folder: str) -> None:
    """One DDP worker: from ``folder``'s initial parameters, a step on its
    shard with each of :data:`CLIPS`, then :func:`sampled_steps`, each
    model's parameters saved (:func:`stepped`), all in one process group:
    starting the workers is most of what a case costs."""
    with open(Path(folder) / f"rank{rank}.err", "w") as err:
        faulthandler.dump_traceback_later(WORKER_TIMEOUT_S, exit=True, file=err)
        try:
            torch.set_num_threads(1)
            os.environ["GLOO_SOCKET_IFNAME"] = "lo"
            timeout = datetime.timedelta(seconds=WORKER_TIMEOUT_S)
            store = dist.TCPStore("127.0.0.1", port, world_size, is_master=False,
                                  timeout=timeout)
            dist.init_process_group("gloo", store=store, rank=rank, world_size=world_size,
                                    timeout=timeout)
            for clip in CLIPS:
                model = DistributedDataParallel(fresh_model(Path(folder) / "initial.pt"))
                one_step(model, shard_batches()[rank], world_size, clip)
                torch.save(model.module.state_dict(), stepped(Path(folder), rank, clip))
            model = DistributedDataParallel(fresh_model(Path(folder) / "sampled.pt", SAMPLED))
            sampled_steps(model, rank, world_size)
            torch.save(model.module.state_dict(), stepped(Path(folder), rank, "sampled"))
            dist.destroy_process_group()
        except BaseException:
            err.write(traceback.format_exc())
            raise
        finally:
            faulthandler.cancel_dump_traceback_later()
    (Path(folder) / f"rank{rank}.done").touch()


def run_workers(world_size: int, folder: Path) -> None:
    """Spawns ``world_size`` workers (:func:`worker`) on ``folder``.
    The rendezvous store lives here, on a port the OS picks, so no other
    program can take the port between choosing and binding it. A worker that
    finished its work but hangs in interpreter teardown (gloo's threads, seen
    on a loaded 2-core machine) is stopped and counted as finished."""
    context = mp.get_context("spawn")
    store = dist.TCPStore("127.0.0.1", 0, world_size, is_master=True, wait_for_workers=False)
    processes = [context.Process(target=worker, args=(rank, world_size, store.port, str(folder)))
                 for rank in range(world_size)]
    for process in processes:
        process.start()
    deadline = time.monotonic() + WORKER_TIMEOUT_S + 30
    while time.monotonic() < deadline and any(
            p.is_alive() and not (folder / f"rank{r}.done").exists()
            for r, p in enumerate(processes)):
        time.sleep(0.2)
    for process in processes:
        process.join(timeout=10)
    finished = [(folder / f"rank{rank}.done").exists() for rank in range(world_size)]
    for process in processes:
        if process.is_alive():
            process.terminate()
            process.join()
    del store
    errors = "\n".join(p.read_text() for p in sorted(folder.glob("*.err")))
    codes = [0 if done and p.exitcode == -15 else p.exitcode
             for done, p in zip(finished, processes, strict=True)]
    assert codes == [0] * world_size, f"DDP workers exited with {codes}:\n{errors}"


@pytest.fixture(scope="module")
def two_workers(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of one run of two DDP workers (:func:`worker`): the
    initial parameters of both models (each built from torch's generator
    seeded 0) and each worker's parameters after each case."""
    folder = tmp_path_factory.mktemp("ddp")
    for name, config in (("initial", CONFIG), ("sampled", SAMPLED)):
        torch.manual_seed(0)
        torch.save(build_model(config, DATASETS.get("ddi"), NUM_NODES).state_dict(),
                   folder / f"{name}.pt")
    run_workers(2, folder)
    return folder


def ranks(folder: Path, case: object) -> list[dict]:
    """Each worker's parameters after ``case``."""
    return [torch.load(stepped(folder, rank, case), weights_only=True) for rank in (0, 1)]


@pytest.mark.slow  # one pair of worker processes for the three DDP tests: 7 s on 2 cores
@pytest.mark.parametrize("clip", CLIPS)
def test_two_ddp_workers_match_one_worker_after_a_step_on_the_same_global_batch(two_workers,
                                                                                clip):
    initial = two_workers / "initial.pt"
    single = fresh_model(initial)
    one_step(single, global_batch(shard_batches()), world_size=1, clip=clip)
    expected = single.state_dict()

    rank0, rank1 = ranks(two_workers, clip)
    start = torch.load(initial, weights_only=True)
    assert any(not torch.allclose(start[k], expected[k]) for k in start)
    for key in expected:
        torch.testing.assert_close(rank0[key], rank1[key], atol=0, rtol=0)
        torch.testing.assert_close(rank0[key], expected[key], atol=1e-6, rtol=1e-5,
                                   msg=lambda m, key=key: f"{key}: {m}")


def test_one_worker_on_the_concatenated_shards_differs_from_one_shard_alone(tmp_path):
    # the comparison above is only meaningful if the shards move the
    # parameters differently
    torch.manual_seed(0)
    initial = tmp_path / "initial.pt"
    torch.save(build_model(CONFIG, DATASETS.get("ddi"), NUM_NODES).state_dict(), initial)
    whole, part = fresh_model(initial), fresh_model(initial)
    one_step(whole, global_batch(shard_batches()), world_size=1)
    one_step(part, shard_batches()[0], world_size=1)
    weight = "node_input.embedding.weight"
    assert not torch.allclose(whole.state_dict()[weight], part.state_dict()[weight], atol=1e-6)


@pytest.mark.slow  # the two worker processes above
def test_two_sampled_ddp_workers_keep_the_same_embedding_rows(two_workers):
    """Each worker samples its own neighbourhoods, so each steps other
    embedding rows; DDP all-reduces the sparse row gradients (gloo), and
    SparseAdam on every worker applies the same update to the union of the
    rows: after three steps the workers' embeddings and weights agree."""
    start = torch.load(two_workers / "sampled.pt", weights_only=True)
    rank0, rank1 = ranks(two_workers, "sampled")
    weight = "node_input.embedding.weight"
    assert not torch.allclose(rank0[weight], start[weight])
    for key in rank0:
        torch.testing.assert_close(rank0[key], rank1[key], atol=0, rtol=0,
                                   msg=lambda m, key=key: f"{key}: {m}")
