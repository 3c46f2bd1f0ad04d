"""The estimate of a run's peak GPU memory: it meets the allocator peaks
measured on an H200, and grows with what a step holds."""
import dataclasses

import pytest

from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import DATASETS
from plnlp_core.memory_estimate import CONTEXT_BYTES, MIB, parameter_count, peak_gpu_bytes

DDI = DATASETS.get("ddi")
DDI_NODES, DDI_TRAIN_EDGES = 4267, 1_067_911
PAPER = PLNLPConfig(embedding_dim=512, hidden_channels=512, predictor="mlp", predictor_hidden=512,
                    num_neg=3, batch_size=65536)


def allocator_mib(config: PLNLPConfig) -> float:
    return (peak_gpu_bytes(config, DDI, DDI_NODES, DDI_TRAIN_EDGES) - CONTEXT_BYTES) / MIB


@pytest.mark.parametrize(("config", "measured_mib"), [
    (PAPER, 3961),  # ddi paper, fp32 (benchmarks/README.md, "On a GPU")
    (PAPER.replace(embedding_dim=64, hidden_channels=64, predictor_hidden=64), 862),  # cpu
    (PAPER.replace(embedding_dim=64, hidden_channels=64, predictor_hidden=64,
                   encoder_level="edge"), 3022),  # cpu at the edge level
])
def test_the_estimate_meets_the_peaks_measured_on_an_h200(config, measured_mib):
    assert 0.97 * measured_mib <= allocator_mib(config) <= 1.3 * measured_mib


def test_parameters_are_counted_without_allocating_them():
    # 4,267 x 512 embedding, two SAGE layers (2 x 512 x 512 + 512 each), MLP 512x512 + 512x1
    expected = 4267 * 512 + 2 * (2 * 512 * 512 + 512) + (512 * 512 + 512) + (512 + 1)
    assert parameter_count(PAPER, DDI, DDI_NODES) == expected


def test_the_estimate_grows_with_the_step_and_shrinks_in_bfloat16():
    base = allocator_mib(PAPER)
    assert allocator_mib(PAPER.replace(batch_size=131072)) > 1.8 * base - 1000
    assert allocator_mib(PAPER.replace(num_neg=5)) > base
    assert allocator_mib(PAPER.replace(predictor_layers=8)) > 2 * base  # each layer's buffers
    assert allocator_mib(PAPER.replace(precision="bf16")) < 0.7 * base


def test_a_worker_past_the_largest_node_s_memory_is_refused_with_the_fix():
    from plnlp_core.errors import PLNLPError
    from plnlp_core.memory_estimate import host_bytes, refuse_past_memory

    info = DATASETS.get("ppa")
    full = PLNLPConfig(dataset="ppa", node_input="both")
    sampled = full.replace(fanouts=(15, 10))
    parts = host_bytes(full, info, 576_289, 21_231_931)
    assert parts["graph"] == 52 * 21_231_931 + 12 * 576_289
    assert parts["features"] == 4 * 576_289 * 58
    words = dataclasses.replace(info, feature_dim=100_000, feature_entries=30_000_000)
    assert host_bytes(full, words, 576_289, 21_231_931)["features"] == 20 * 30_000_000  # 600 MB,
    # where the dense matrix would be 230 GB and refuse the run
    embedding = 576_289 * full.embedding_dim
    assert host_bytes(sampled, info, 576_289, 21_231_931)["model"] == parts["model"] - 4 * embedding
    need = sum(parts.values())
    refuse_past_memory(full, info, 576_289, 21_231_931, need)  # just fits
    with pytest.raises(PLNLPError, match=r"full batch needs about .* GiB .*set fanouts"):
        refuse_past_memory(full, info, 576_289, 21_231_931, need - 1)
    with pytest.raises(PLNLPError, match=r"with fanouts \[15, 10\] .*lower embedding_dim"):
        refuse_past_memory(sampled, info, 576_289, 21_231_931, 2**30)
