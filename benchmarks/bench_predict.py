"""Using a trained model: pairs scored per second through
``pipelines/predict.py`` and through ``mlflow models serve`` (one request of
``--pairs`` pairs), and the seconds and peak memory of a top-K
recommendation table, for a dataset's ``paper`` model.

    python benchmarks/bench_predict.py --dataset ddi
    python benchmarks/bench_predict.py --dataset ppa --size real --sample 0.01

Scoring costs the same whatever the weights, so the model is the preset's
architecture at its initial weights, encoded once over the input graph and
logged as the pipeline logs it (:mod:`components.recording.model_export`) to a
scratch MLflow store. Peak memory is the largest resident set of the
``predict.py`` process (its Python, torch and MLflow included).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import mlflow
import pandas as pd
import torch
from timing import MIB, PeakMemory, timed

from components.recording.model_export import log_link_model, logged_model_uri
from pipelines.planning.presets import load_preset
from plnlp_core.assembly import build_input_adjacency, build_model
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import DATASETS, resolve_data_root
from plnlp_core.data.node_ids import NodeIds
from plnlp_core.data.ogb_reader import load_ogb
from plnlp_core.data.standins import cached_standin
from plnlp_core.scoring.link_scorer import LinkScorer

REPO = Path(__file__).resolve().parents[1]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line (see the module)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="ddi", help=", ".join(DATASETS.names))
    parser.add_argument("--preset", default="paper", help="pipelines/presets/<dataset>.yaml")
    parser.add_argument("--size", help="a stand-in of this size (tiny or real) instead of "
                                       "the real dataset under $PLNLP_DATA_ROOT")
    parser.add_argument("--pairs", type=int, default=10_000, help="pairs per request")
    parser.add_argument("--top-k", type=int, default=20)
    parser.add_argument("--sample", type=float, default=1.0,
                        help="fraction of the nodes to recommend for (default: all)")
    parser.add_argument("--json", type=Path, help="write the figures to this JSON file")
    return parser.parse_args(argv)


def logged_model(args: argparse.Namespace, work: Path) -> tuple[str, int, float]:
    """The preset's model of the dataset, logged to MLflow: its URI, the
    number of nodes and the seconds encoding took."""
    info = DATASETS.get(args.dataset)
    root = cached_standin(info.name, args.size) if args.size else resolve_data_root(None)
    split = load_ogb(info, Path(root))
    config = PLNLPConfig.from_mapping({**load_preset(info.name, args.preset), "dataset": info.name})
    torch.manual_seed(0)
    model = build_model(config, info, split.num_nodes)
    adj, _ = build_input_adjacency(split, config)
    encode_s, scorer = timed(lambda: LinkScorer.encode(model, split, adj, config,
                                                        NodeIds(split.num_nodes)))
    scorer.save(work / "scorer")
    with mlflow.start_run() as run:
        log_link_model(work / "scorer", "long")
    return logged_model_uri(run.info.run_id), split.num_nodes, encode_s


def predict(argv: list[str], env: dict[str, str]) -> tuple[str, float, float]:
    """Runs ``pipelines/predict.py``; its summary line, seconds and peak RSS in MiB."""
    process = subprocess.Popen([sys.executable, str(REPO / "pipelines" / "predict.py"), *argv],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with PeakMemory(pid=process.pid, interval=0.2) as memory:
        seconds, (out, err) = timed(process.communicate)
    if process.returncode != 0:
        raise SystemExit(f"predict.py failed:\n{err[-3000:]}")
    return out.strip().splitlines()[-1], seconds, memory.rss / MIB


def served_pairs_per_second(uri: str, pairs: pd.DataFrame, env: dict[str, str]) -> float:
    """Median over 3 requests of ``pairs`` to ``mlflow models serve``."""
    port = 5601
    server = subprocess.Popen([sys.executable, "-m", "mlflow", "models", "serve", "-m", uri,
                               "--env-manager", "local", "--port", str(port)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    try:
        wait_until_up(f"http://127.0.0.1:{port}/ping")
        body = json.dumps({"dataframe_split": pairs.to_dict(orient="split")}).encode()
        url = f"http://127.0.0.1:{port}/invocations"
        seconds = [timed(lambda: post_json(url, body))[0] for _ in range(3)]
        return len(pairs) / statistics.median(seconds)
    finally:
        os.killpg(server.pid, 9)
        server.wait()


def post_json(url: str, body: bytes) -> bytes:
    """The answer to a JSON ``body`` posted to ``url``."""
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as response:
        return response.read()


def wait_until_up(url: str, timeout: float = 600) -> None:
    """Returns once ``url`` answers; exits after ``timeout`` seconds without an answer."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except OSError:
            time.sleep(1)
    raise SystemExit(f"the scoring server did not answer at {url}")


def main(argv: list[str] | None = None) -> None:
    """Logs the model, then times predict.py, the server and a top-K table."""
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-predict-") as scratch:
        work = Path(scratch)
        uri = f"sqlite:///{work / 'mlflow.db'}"
        mlflow.set_tracking_uri(uri)
        env = {**os.environ, "MLFLOW_TRACKING_URI": uri}
        model, num_nodes, encode_s = logged_model(args, work)
        generator = torch.Generator().manual_seed(0)
        pairs = pd.DataFrame(torch.randint(num_nodes, (args.pairs, 2), generator=generator)
                             .numpy(), columns=["src", "dst"])
        pairs.to_csv(work / "pairs.csv", index=False)
        scored, _, _ = predict(["--model", model, "--pairs", str(work / "pairs.csv"),
                                "--out", str(work / "scored.parquet")], env)
        served = served_pairs_per_second(model, pairs, env)
        nodes = torch.randperm(num_nodes, generator=generator)[:max(1, int(args.sample
                                                                          * num_nodes))]
        pd.DataFrame({"id": nodes.sort().values.numpy()}).to_csv(work / "nodes.csv",
                                                                 index=False)
        top, top_s, top_mib = predict(["--model", model, "--top-k", str(args.top_k),
                                       "--for", str(work / "nodes.csv"),
                                       "--out", str(work / "top.parquet")], env)
    figures = {"dataset": args.dataset, "size": args.size or "real data",
               "preset": args.preset, "nodes": num_nodes, "encode_s": round(encode_s, 2),
               "predict_pairs_per_s": float(scored.split("(")[1].split(" pairs/s")[0]
                                            .replace(",", "")),
               "served_pairs_per_s": round(served), "top_k_nodes": int(nodes.numel()),
               "top_k_s": round(top_s, 1), "top_k_peak_rss_mib": round(top_mib)}
    print(f"predict.py: {scored}")
    print(f"served:     {served:,.0f} pairs/s ({args.pairs:,} pairs a request)")
    print(f"top-{args.top_k}:     {top} (command {top_s:.1f} s, peak RSS {top_mib:,.0f} MiB)")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
