"""The benchmarks' output: aligned plain-text tables, and the text of
``benchmarks/run.py``'s report, one section per part it measured."""
from step_timing import PHASES


def format_rows(header: list[str], rows: list[list[str]], left: tuple[int, ...] = (0,)) -> str:
    """``header`` and ``rows`` in aligned columns two spaces apart, the
    columns ``left`` left-aligned and the others right-aligned."""
    lines = [header, *rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) if i in left else cell.rjust(w)
                               for i, (cell, w) in enumerate(zip(line, widths, strict=True)))
                     for line in lines)


def report_text(report: dict) -> str:
    """The report of ``benchmarks/run.py``: the training table, then each
    part the report holds (phases, heuristics, walks, the pipeline)."""
    parts = [training_table(report["training"])]
    if any(row["phases_ms"] is not None for row in report["training"]):
        parts.append("\n" + phases_table(report["training"]))
    if "heuristics" in report:
        parts.append("\n" + heuristics_table(report["heuristics"]))
    if "walks" in report:
        parts.append("\n" + walks_line(report["walks"]))
    if "pipeline" in report:
        parts.append(pipeline_text(report["pipeline"]))
    return "\n".join(parts)


def training_table(rows: list[dict]) -> str:
    """One row a workload; ``% peak`` is of the GEMM peak at its precision."""
    header = ["workload", "precision", "s/epoch", "pairs/s", "pos/s", "eval pairs/s", "GFLOP/s",
              "GEMM fp32", "GEMM bf16", "% peak", "x naive", "peak RSS MiB", "CUDA MiB"]
    return format_rows(header, [[
        r["workload"], r["precision"], f"{r['epoch_s']:.2f}", f"{r['pairs_per_s']:,.0f}",
        f"{r['positives_per_s']:,.0f}", f"{r['eval_pairs_per_s']:,.0f}",
        f"{r['step_gflops']:.1f}", f"{r['gemm_peak_gflops_fp32']:.1f}",
        f"{r['gemm_peak_gflops_bf16']:.1f}",
        f"{100 * r['step_gflops'] / r['gemm_peak_gflops']:.0f}", f"{r['naive_ratio']:.2f}",
        f"{r['peak_rss_mib']:,.0f}",
        "-" if r["cuda_peak_mib"] is None else f"{r['cuda_peak_mib']:,.0f}",
    ] for r in rows])


def phases_table(rows: list[dict]) -> str:
    """Milliseconds per batch of each phase of the step, one row a workload."""
    return "ms per batch, by phase\n" + format_rows(["workload", *PHASES, "total"], [
        [r["workload"], *(f"{r['phases_ms'][p]:.1f}" for p in PHASES),
         f"{sum(r['phases_ms'].values()):.1f}"] for r in rows])


def heuristics_table(heuristics: dict) -> str:
    """Seconds, pairs per second, memory and test Hits@100 of each heuristic."""
    return (f"heuristics on the {heuristics['graph']}, valid and test pairs scored\n"
            + format_rows(["heuristic", "seconds", "pairs/s", "peak RSS MiB", "test hits@100"], [
                [r["heuristic"], f"{r['seconds']:.1f}", f"{r['pairs_per_s']:,.0f}",
                 f"{r['peak_rss_mib']:,.0f}", f"{r['test_hits_100']:.4f}"]
                for r in heuristics["rows"]]))


def walks_line(walks: dict) -> str:
    """Random-walk steps per second and Parquet's write and read MB/s."""
    return (f"random walks {walks['walk_steps_per_s'] / 1e6:.1f} M steps/s; Parquet "
            f"{walks['parquet_mb']:.0f} MB written at {walks['parquet_write_mb_per_s']:.0f} "
            f"MB/s, read at {walks['parquet_read_mb_per_s']:.0f} MB/s")


def pipeline_text(pipeline: dict | None) -> str:
    """The pipeline's overhead ratio and start-up phases, or why they are missing."""
    if pipeline is None:
        return "pipeline overhead: not measured (Ray or MLflow missing, or --skip-pipeline)"
    from components.train.startup import (
        describe_startup,  # the pipeline's: own_graphs.py needs none
    )

    startup = pipeline["startup"]
    return (f"\npipeline ({pipeline['config']}): median epoch "
            f"{pipeline['pipeline_median_epoch_s']:.3f} s through Ray against "
            f"{pipeline['fit_median_epoch_s']:.3f} s in fit, ratio "
            f"{pipeline['overhead_ratio']:.3f}\n"
            f"start of `pipelines/run.py --dataset ddi --preset smoke` (stage cache "
            f"{startup['stage_cache']}): "
            f"{describe_startup(startup)}\n"
            f"the same command with one epoch: {startup['command_s']:.1f} s in all, "
            f"{startup['after_last_epoch_s']:.1f} s of it after its epoch (final metrics, "
            "model, Ray's shutdown, exit)")
