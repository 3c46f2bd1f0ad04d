"""The benchmarks' measuring tools: a synchronised clock, peaks of memory,
the peak of a dense matrix product, the name of the device and the median
epoch of a run. Only torch is needed."""
import contextlib
import platform
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

MIB = 2**20


def sync(device: torch.device | None) -> None:
    """Waits for ``device``'s queued work (CUDA only; nothing on CPU)."""
    if device is not None and device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(fn: Callable[[], object], device: torch.device | None = None) -> tuple[float, object]:
    """Seconds ``fn`` takes and what it returns, ``device`` synchronised
    before and after."""
    sync(device)
    start = time.perf_counter()
    result = fn()
    sync(device)
    return time.perf_counter() - start, result


def rss(pid: int | str = "self") -> int:
    """The resident set size in bytes of process ``pid`` (from
    ``/proc/<pid>/status``; 0 where that cannot be read, e.g. the process
    has ended)."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


class PeakMemory:
    """The peak resident set size of process ``pid`` (this one by default)
    while the block runs, sampled every ``interval`` seconds, and on a CUDA
    ``device`` the allocator's peak.

    Attributes:
        rss (int): The peak resident set size in bytes.
        cuda (int, optional): The CUDA allocator's peak in bytes (``None``
            off CUDA).
    """

    def __init__(self, device: torch.device | None = None, pid: int | str = "self",
                 interval: float = 0.05) -> None:
        self.device, self.pid, self.interval = device, pid, interval
        self.rss = 0
        self.cuda: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> "PeakMemory":
        if self._on_cuda:
            torch.cuda.reset_peak_memory_stats(self.device)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.rss = max(self.rss, rss(self.pid))
        if self._on_cuda:
            self.cuda = torch.cuda.max_memory_allocated(self.device)

    @property
    def _on_cuda(self) -> bool:
        return self.device is not None and self.device.type == "cuda"

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            self.rss = max(self.rss, rss(self.pid))


def gemm_gflops(rows: int, inner: int, cols: int, device: torch.device,
                dtype: torch.dtype = torch.float32) -> float:
    """The best GFLOP/s of three ``[rows, inner] @ [inner, cols]`` in
    ``dtype`` on ``device``, after a warm-up one."""
    a = torch.randn(rows, inner, device=device, dtype=dtype)
    b = torch.randn(inner, cols, device=device, dtype=dtype)
    a @ b
    best = min(timed(lambda: a @ b, device)[0] for _ in range(3))
    return 2 * rows * inner * cols / best / 1e9


def device_name(device: torch.device) -> str:
    """The GPU's name on CUDA, else the CPU's model name."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "cpu"


def median_interval(ends: Sequence[float]) -> float:
    """The median time between consecutive ``ends`` (in their unit)."""
    return statistics.median(b - a for a, b in zip(ends, ends[1:], strict=False))


def interval_quantile(ends: Sequence[float], quantile: float) -> float:
    """The ``quantile`` (0 to 1, the nearest rank) of the times between
    consecutive ``ends`` (in their unit)."""
    gaps = sorted(b - a for a, b in zip(ends, ends[1:], strict=False))
    return gaps[round(quantile * (len(gaps) - 1))]


def epoch_ends(client: object, run_id: str) -> list[float]:
    """When each epoch of a run ended, in seconds, from the timestamps of
    its ``train_loss`` as the ``MlflowClient`` ``client`` reads them."""
    return sorted(m.timestamp / 1000 for m in client.get_metric_history(run_id, "train_loss"))


def median_epoch_interval(client: object, run_id: str) -> float:
    """The median wall time between consecutive epochs of a run."""
    return median_interval(epoch_ends(client, run_id))
