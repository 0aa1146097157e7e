"""The cluster files: valid for Ray's own autoscaler (prepare_config + validate_config, as
``ray up`` runs them), and safe: the head runs no cells, no credentials, no public dashboard."""

import copy
import re
from pathlib import Path

import pytest
import yaml
from ray.autoscaler._private.util import prepare_config, validate_config

ROOT = Path(__file__).resolve().parents[2]
CLUSTER_FILES = sorted(ROOT.glob("ray_cluster*.yaml"))


def test_there_is_an_aws_and_a_local_cluster_file() -> None:
    assert [p.name for p in CLUSTER_FILES] == ["ray_cluster.yaml", "ray_cluster_local.yaml"]


@pytest.mark.parametrize("path", CLUSTER_FILES, ids=lambda p: p.name)
def test_ray_accepts_the_cluster_file(path: Path) -> None:
    config = yaml.safe_load(path.read_text())
    prepared = prepare_config(copy.deepcopy(config))
    validate_config(prepared)  # raises on any schema violation
    assert prepared["cluster_name"].startswith("varbo-bench")


@pytest.mark.parametrize("path", CLUSTER_FILES, ids=lambda p: p.name)
def test_the_cluster_file_is_safe(path: Path) -> None:
    text = path.read_text()
    config = yaml.safe_load(text)
    head = " ".join(config["head_start_ray_commands"])
    assert "--num-cpus=0" in head  # the driver's node runs no cell
    assert "--dashboard-host=127.0.0.1" in head  # dashboard through an SSH tunnel only
    assert "RAY_AUTH_MODE=token" in head and all(
        "RAY_AUTH_MODE=token" in c for c in config["worker_start_ray_commands"] if "ray start" in c)
    # the token travels as a file from the user's machine, never as a value in the file
    assert config["file_mounts"]["~/.ray/auth_token"] == "~/.ray/auth_token"
    assert not re.search(r"(?i)aws_(secret_)?access_key|secret|password|BEGIN [A-Z ]*PRIVATE KEY",
                         re.sub(r"(?m)#.*$", "", text))
    assert "0.0.0.0/0" not in text  # no port opened to the internet
    # the project is installed at the version mounted from this checkout, torch's CPU build first
    setup = config["setup_commands"]
    torch_line = next(i for i, c in enumerate(setup) if "torch==2.13.0" in c)
    project_line = next(i for i, c in enumerate(setup) if "-e ~/varbo-bench" in c)
    assert torch_line < project_line and "whl/cpu" in setup[torch_line]
    assert config["file_mounts"]["~/varbo-bench"] == "."
    assert {"results", ".venv"} <= set(config["rsync_exclude"])


def test_aws_workers_are_spot_and_the_head_advertises_no_cpu() -> None:
    config = yaml.safe_load((ROOT / "ray_cluster.yaml").read_text())
    types = config["available_node_types"]
    assert types[config["head_node_type"]]["resources"] == {"CPU": 0}
    worker = types["worker"]
    assert worker["node_config"]["InstanceMarketOptions"]["MarketType"] == "spot"
    assert worker["min_workers"] == 0 and worker["max_workers"] >= 1
