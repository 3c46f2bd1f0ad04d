"""An S3 server for the tests: moto's server mode on 127.0.0.1, a bucket
in it, and the environment that points pyarrow, boto3 and MLflow at it."""
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from plnlp_testing.processes import free_port, process_group, wait_for_http

__all__ = ["KEYS", "bucket_keys", "make_bucket", "objects_holding", "s3_env", "s3_filesystem",
           "s3_server", "upload_folder"]

KEYS = {"AWS_ACCESS_KEY_ID": "plnlp-test", "AWS_SECRET_ACCESS_KEY": "plnlp-test-secret",
        "AWS_REGION": "us-east-1", "AWS_DEFAULT_REGION": "us-east-1"}


@contextmanager
def s3_server(folder: Path, checks_keys: bool = False) -> Iterator[str]:
    """A moto S3 server on a free port of 127.0.0.1 for the block; its URL.
    With ``checks_keys`` it refuses every key it has not issued itself."""
    port = free_port()
    argv = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
    env = {**_base_env(), **KEYS, **({"INITIAL_NO_AUTH_ACTION_COUNT": "0"} if checks_keys else {})}
    with process_group(argv, env, folder, folder / f"s3-{port}.log"):
        url = f"http://127.0.0.1:{port}"
        wait_for_http(f"{url}/moto-api/", folder / f"s3-{port}.log", timeout=60, any_status=True)
        yield url


def s3_env(endpoint: str) -> dict[str, str]:
    """The variables a process needs to reach the server at ``endpoint``."""
    return {**KEYS, "AWS_ENDPOINT_URL": endpoint, "MLFLOW_S3_ENDPOINT_URL": endpoint}


def make_bucket(endpoint: str, name: str) -> str:
    """Creates bucket ``name``; returns its ``s3://`` URI."""
    import boto3

    boto3.client("s3", endpoint_url=endpoint, **_boto_keys()).create_bucket(Bucket=name)
    return f"s3://{name}"


def bucket_keys(endpoint: str, name: str) -> list[str]:
    """Every object key of bucket ``name``."""
    import boto3

    pages = boto3.client("s3", endpoint_url=endpoint, **_boto_keys()).get_paginator(
        "list_objects_v2").paginate(Bucket=name)
    return [item["Key"] for page in pages for item in page.get("Contents", [])]


def objects_holding(endpoint: str, name: str, text: str) -> list[str]:
    """The keys of bucket ``name`` whose object holds ``text``."""
    import boto3

    client = boto3.client("s3", endpoint_url=endpoint, **_boto_keys())
    return [key for key in bucket_keys(endpoint, name)
            if text.encode() in client.get_object(Bucket=name, Key=key)["Body"].read()]


def s3_filesystem(endpoint: str) -> object:
    """A ``pyarrow.fs.S3FileSystem`` of the server at ``endpoint``, set up
    without touching this process's environment."""
    import pyarrow.fs as pafs

    return pafs.S3FileSystem(endpoint_override=endpoint, access_key=KEYS["AWS_ACCESS_KEY_ID"],
                             secret_key=KEYS["AWS_SECRET_ACCESS_KEY"], region=KEYS["AWS_REGION"])


def upload_folder(endpoint: str, local: Path, uri: str) -> None:
    """Copies the local folder ``local`` to ``uri`` (``s3://bucket/prefix``)."""
    import pyarrow.fs as pafs

    pafs.copy_files(str(local), uri.removeprefix("s3://"),
                    destination_filesystem=s3_filesystem(endpoint))


def _boto_keys() -> dict[str, str]:
    return {"aws_access_key_id": KEYS["AWS_ACCESS_KEY_ID"],
            "aws_secret_access_key": KEYS["AWS_SECRET_ACCESS_KEY"],
            "region_name": KEYS["AWS_REGION"]}


def _base_env() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if not key.startswith("AWS_")}

