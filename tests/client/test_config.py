"""Loading connection settings through the kubernetes package's loaders."""

from __future__ import annotations

import base64
import tempfile
from pathlib import Path

import pytest
import yaml

from scheduler.client.config import (
    DEFAULT_BURST,
    DEFAULT_QPS,
    USER_AGENT,
    ConfigError,
    load_client_config,
)

CA_PEM = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def write_kubeconfig(path: Path, server: str, user: dict[str, object]) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "c",
                "cluster": {
                    "server": server,
                    "certificate-authority-data": base64.b64encode(CA_PEM).decode(),
                },
            }
        ],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "ctx",
    }
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture(autouse=True)
def no_ambient_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def test_explicit_kubeconfig_with_a_token(tmp_path: Path) -> None:
    path = write_kubeconfig(tmp_path / "kc", "https://10.0.0.1:6443/", {"token": "s3cret"})
    cfg = load_client_config(path, qps=20, burst=30)
    assert cfg.server == "https://10.0.0.1:6443"
    assert cfg.auth() == {"Authorization": "Bearer s3cret"}
    assert cfg.ca_file is not None and Path(cfg.ca_file).read_bytes() == CA_PEM
    assert (cfg.qps, cfg.burst) == (20, 30)
    assert cfg.user_agent == USER_AGENT
    assert cfg.verify_tls


def test_kubeconfig_env_is_used_and_zero_limits_take_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_kubeconfig(tmp_path / "kc", "https://k8s.example:443", {"token": "t"})
    monkeypatch.setenv("KUBECONFIG", str(path))
    cfg = load_client_config(qps=0, burst=0)
    assert cfg.server == "https://k8s.example:443"
    assert (cfg.qps, cfg.burst) == (DEFAULT_QPS, DEFAULT_BURST)


def test_master_overrides_the_server(tmp_path: Path) -> None:
    path = write_kubeconfig(tmp_path / "kc", "https://10.0.0.1:6443", {"token": "t"})
    assert load_client_config(path, master="https://lb:6443").server == "https://lb:6443"


def test_the_auth_header_object_is_stable_until_the_token_changes(tmp_path: Path) -> None:
    path = write_kubeconfig(tmp_path / "kc", "https://10.0.0.1:6443", {"token": "t"})
    cfg = load_client_config(path)
    first = cfg.auth()
    cfg.auth.invalidate()
    assert cfg.auth() is first


def test_nothing_to_load_is_an_error() -> None:
    with pytest.raises(ConfigError):
        load_client_config()


def test_a_broken_kubeconfig_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "kc"
    path.write_text("apiVersion: v1\nkind: Config\n")
    with pytest.raises(ConfigError):
        load_client_config(path)


def test_embedded_certificates_go_to_dev_shm_when_no_temporary_directory_is_usable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On a read-only root without a writable /tmp the kubernetes loader could not write a
    kubeconfig's *-data certificates (found running the image as uid 65532)."""
    from scheduler.client import config as client_config

    assert client_config.certificate_dir() == tempfile.gettempdir()

    def no_temp_dir() -> str:
        raise FileNotFoundError("No usable temporary directory found")

    monkeypatch.setattr(client_config.tempfile, "gettempdir", no_temp_dir)
    monkeypatch.setattr(client_config.os, "access", lambda path, mode: str(path) == "/dev/shm")
    assert client_config.certificate_dir() == ("/dev/shm" if Path("/dev/shm").is_dir() else None)
