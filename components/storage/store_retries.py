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
:mod:`components.storage.stage_cache`)."""
import math
import os

import pyarrow.fs as pafs

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


def s3_endpoint() -> str | None:
    """The S3 endpoint the environment names: ``AWS_ENDPOINT_URL_S3``, else
    ``AWS_ENDPOINT_URL``, as ``pyarrow.fs.FileSystem.from_uri`` reads them
    (``None``: AWS itself)."""
    return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None


def patient_s3(region: str) -> pafs.S3FileSystem:
    """An S3 file system in ``region`` that retries for the store's
    patience, at :func:`s3_endpoint`, with the credentials the environment
    holds."""
    strategy = pafs.AwsDefaultS3RetryStrategy(max_attempts=retry_attempts(store_patience_s()))
    return pafs.S3FileSystem(region=region, endpoint_override=s3_endpoint(),
                             retry_strategy=strategy)
