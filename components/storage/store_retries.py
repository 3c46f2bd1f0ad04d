"""How long an S3 store that stops answering is waited for.

pyarrow's S3 file system tries a request 3 times by default, within a
fraction of a second: a restarted MinIO or a network blip fails the run.
The file system here uses the AWS SDK's default strategy, whose waits double
from 25 ms (25 ms × 2^k before the k-th retry, so ``n`` attempts wait about
25 ms × 2^n in all), with as many attempts as reach ``PLNLP_STORE_PATIENCE_S``
(default 120 s): an operation fails only once the store has not answered for
between that and twice that. Each request is retried on its own, so a
multipart upload goes on with the part that failed; nothing is named
complete until every write before it went through (see
:mod:`components.storage.stage_cache`).

The same file system serves Ray Train's and Tune's storage (the DDP
path's checkpoints, a sweep's state): :class:`PatientS3FileSystem` pickles
as itself, where pyarrow's own drops its retry strategy on the way to
another process."""
import math
import os
import time
from collections.abc import Callable
from typing import TypeVar

import pyarrow.fs as pafs

T = TypeVar("T")

PATIENCE_ENV = "PLNLP_STORE_PATIENCE_S"
PATIENCE_S = 120.0
FIRST_WAIT_S = 0.025  # the AWS SDK's DefaultRetryStrategy's scale factor


def store_patience_s() -> float:
    """``PLNLP_STORE_PATIENCE_S``, else 120 s."""
    return float(os.environ.get(PATIENCE_ENV, PATIENCE_S))


def retry_attempts(patience_s: float) -> int:
    """The attempts whose doubling waits add up to at least ``patience_s``
    (at least pyarrow's 3)."""
    return max(3, math.ceil(math.log2(max(patience_s, FIRST_WAIT_S) / FIRST_WAIT_S)))


def store_did_not_answer(error: BaseException) -> bool:
    """Whether ``error`` is an object store's that did not answer (pyarrow's
    ``NETWORK_CONNECTION``: refused, unreachable, timed out)."""
    return "NETWORK_CONNECTION" in str(error)


def waited_for(call: Callable[[], T]) -> T:
    """``call()``, made again with doubling waits (from 25 ms) while the
    store does not answer, for up to the store's patience; then its last
    error. For what pyarrow does before it has a file system to retry with:
    the ``HeadBucket`` by which ``FileSystem.from_uri`` finds a bucket's
    region on AWS."""
    deadline, wait = time.monotonic() + store_patience_s(), FIRST_WAIT_S
    while True:
        try:
            return call()
        except OSError as error:
            remaining = deadline - time.monotonic()
            if not store_did_not_answer(error) or remaining <= 0:
                raise
        time.sleep(min(wait, remaining))
        wait *= 2


def s3_endpoint() -> str | None:
    """The S3 endpoint the environment names: ``AWS_ENDPOINT_URL_S3``, else
    ``AWS_ENDPOINT_URL``, as ``pyarrow.fs.FileSystem.from_uri`` reads them
    (``None``: AWS itself)."""
    return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None


class PatientS3FileSystem(pafs.S3FileSystem):
    """pyarrow's S3 file system with the retry strategy of :func:`patient_s3`,
    which it keeps when pickled into a Ray task, actor or Train worker:
    there it is made again by :func:`patient_s3`, from that process's
    environment (its patience, endpoint and keys: no key travels)."""

    def __reduce__(self) -> tuple:
        return patient_s3, (self.region,)


def patient_s3(region: str) -> PatientS3FileSystem:
    """An S3 file system in ``region`` that retries for the store's
    patience, at :func:`s3_endpoint`, with the credentials the environment
    holds."""
    strategy = pafs.AwsDefaultS3RetryStrategy(max_attempts=retry_attempts(store_patience_s()))
    return PatientS3FileSystem(region=region, endpoint_override=s3_endpoint(),
                               retry_strategy=strategy)
