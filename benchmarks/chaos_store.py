"""The chaos run's flaky object store (:mod:`chaos`, ``benchmarks/chaos.py``; the kind
:data:`KIND`): moto's S3 server on loopback behind the fault-injecting proxy of the tests
(``benchmarks/flaky_store.py``).

A round of this kind runs its driver, and then the resume, into ``s3://chaos/round-NN`` through the
proxy, the round's copied cells uploaded there first. From the fault's moment to the driver's end,
a fifth of the store's requests meet a fault of a random kind (HTTP 500, 503 ``SlowDown``, a
connection reset, a request held past the client's read timeout), which the client's own retries
must absorb (``harness.remote``); the resume runs undisturbed. After each driver the round's local
folder is replaced by a copy of the store's objects, so that the round is judged as any other (lost,
duplicated, differing cells, leftovers); a cell still kept on this machine after the resume
(``harness.spill``, here under the working folder) is a leftover too.

Needs the test extra (moto's server, boto3, s3fs): ``pip install -e '.[test]'``.
"""

from __future__ import annotations

import logging
import random
import shutil
from collections import Counter
from pathlib import Path

import chaos_driver  # noqa: F401 (first: it puts this checkout's harness on sys.path)

from harness import remote, spill

KIND = "flaky-store"
BUCKET = "chaos"
#: The share of requests that meet a fault, the client's read timeout (s) and how long a stall
#: holds its answer (s): short, so that a stall costs seconds, not the default's 20.
RATE, READ_TIMEOUT_S, STALL_S = 0.2, 2.0, 3.0
_KEYS = {"AWS_ACCESS_KEY_ID": "chaos", "AWS_SECRET_ACCESS_KEY": "chaos", "AWS_DEFAULT_REGION": "us-east-1"}


def missing() -> str | None:
    """Why the kind cannot run here (a package of the test extra is missing), or None."""
    for module in ("moto.server", "boto3", "s3fs", "upath"):
        try:
            __import__(module)
        except ImportError:
            return f"{KIND} needs {module.split('.')[0]} (pip install -e '.[test]')"
    return None


class FlakyStore:
    """The server, its bucket and the proxy, started at once, for the whole chaos run; ``work`` holds
    the keep of the drivers (``VARBO_SPILL_DIR``)."""

    def __init__(self, work: Path) -> None:
        import boto3
        from flaky_store import FAULTS, FlakyProxy  # beside this script
        from moto.server import ThreadedMotoServer

        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        self.server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self.server.start()
        host, port = self.server.get_host_and_port()
        self.s3 = boto3.client("s3", endpoint_url=f"http://{host}:{port}", **_client_keys())
        self.s3.create_bucket(Bucket=BUCKET)
        self.faults = FAULTS
        self.proxy = FlakyProxy(f"{host}:{port}", rate=RATE, stall_s=STALL_S)
        self.endpoint = self.proxy.start()
        self.kept = work / "kept"
        self.since = 0  # the first request of the faulted ones (disturb)

    def stop(self) -> None:
        self.proxy.stop()
        self.server.stop()

    def uri(self, folder: Path) -> str:
        """The round's results folder in the store."""
        return f"s3://{BUCKET}/{folder.name}"

    def env(self) -> dict[str, str]:
        """The drivers' environment: the proxy as the endpoint, test keys, a short read timeout."""
        return {**_KEYS, "AWS_ENDPOINT_URL": self.endpoint, remote.READ_VARIABLE: str(READ_TIMEOUT_S),
                spill.SPILL_VARIABLE: str(self.kept)}

    def upload(self, folder: Path) -> None:
        """The round's start: the store's folder holds what ``folder`` holds (the copied cells), the
        proxy is calm and has noted nothing."""
        self.calm()
        self.proxy.requests.clear()
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            self.s3.upload_file(str(path), BUCKET, f"{folder.name}/{path.relative_to(folder)}")

    def disturb(self, rng: random.Random) -> str:
        """Faults from now on (their draws seeded from ``rng``); what was done."""
        self.proxy.rng.seed(rng.getrandbits(64))
        self.proxy.kinds = self.faults
        self.since = len(self.proxy.requests)
        return f"{RATE:.0%} of the store's requests faulted ({', '.join(self.faults)}) from then on"

    def calm(self) -> str:
        """No more faults; the count of those injected since :meth:`disturb`, and of the requests."""
        self.proxy.kinds = ()
        requests = self.proxy.requests[self.since:]
        faults = Counter(request.fate for request in requests if request.fate in self.faults)
        counts = ", ".join(f"{kind} {faults[kind]}" for kind in self.faults)
        return f": {sum(faults.values())} faults in {len(requests)} requests ({counts})"

    def mirror(self, folder: Path) -> None:
        """Replace ``folder`` by a copy of the store's folder of that name (to be judged as a local
        round's folder)."""
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        pages = self.s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=f"{folder.name}/")
        for item in (item for page in pages for item in page.get("Contents", [])):
            relative = item["Key"][len(folder.name) + 1:]
            if relative and not relative.endswith("/"):  # a folder's marker holds nothing
                target = folder / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                self.s3.download_file(BUCKET, item["Key"], str(target))

    def kept_cells(self) -> list[str]:
        """The cells kept on this machine (and not yet written by a run): after a resume, none."""
        return sorted(f"kept: {path.relative_to(self.kept)}" for path in self.kept.rglob("*.parquet"))


def _client_keys() -> dict[str, str]:
    return {"aws_access_key_id": _KEYS["AWS_ACCESS_KEY_ID"],
            "aws_secret_access_key": _KEYS["AWS_SECRET_ACCESS_KEY"],
            "region_name": _KEYS["AWS_DEFAULT_REGION"]}
