"""Run ``dpwitness serve`` as a real subprocess on 127.0.0.1 (for tests, benchmarks and demos)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    """A TCP port that was free on 127.0.0.1 a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK, 0))
        port: int = probe.getsockname()[1]
        return port


class ServerProcess:
    """``python -m dpwitness serve --config CONFIG --host 127.0.0.1 --port PORT`` in its own process group."""

    def __init__(
        self,
        config: str | os.PathLike[str],
        *,
        port: int | None = None,
        log: Path | None = None,
        env: dict[str, str] | None = None,
        workers: int = 1,
        arguments: tuple[str, ...] = (),
    ) -> None:
        self.config = Path(config)
        self.arguments = arguments
        self.workers = workers
        self.env = {**os.environ, **(env or {})}
        self.port = port or free_port()
        self.url = f"http://{LOOPBACK}:{self.port}"
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, *, timeout: float = 60.0) -> ServerProcess:
        command = [
            sys.executable,
            "-m",
            "dpwitness",
            "serve",
            "--config",
            str(self.config),
            "--host",
            LOOPBACK,
            "--port",
            str(self.port),
            "--workers",
            str(self.workers),
            *self.arguments,
        ]
        output = open(self.log, "ab") if self.log else subprocess.DEVNULL  # noqa: SIM115
        self.process = subprocess.Popen(command, stdout=output, stderr=output, env=self.env, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"dpwitness serve exited with status {self.process.returncode} (log: {self.log})")
            try:
                if httpx.get(f"{self.url}/health", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"dpwitness serve did not answer on {self.url} within {timeout} s")

    def kill(self) -> None:
        """SIGKILL to the server's process group (workers included): no shutdown hook runs."""
        self._signal(signal.SIGKILL)

    def stop(self) -> None:
        """SIGTERM (a clean shutdown), then SIGKILL if it takes more than 10 s."""
        self._signal(signal.SIGTERM, wait=10.0)

    def _signal(self, number: signal.Signals, wait: float = 30.0) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        try:
            os.killpg(self.process.pid, number)  # the group this object started (start_new_session)
            self.process.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        except ProcessLookupError:
            pass

    def __enter__(self) -> ServerProcess:
        return self.start() if self.process is None else self

    def __exit__(self, *_: object) -> None:
        self.stop()


def write_config(
    path: str | os.PathLike[str],
    *,
    tables: dict[str, dict[str, object]],
    analysts: dict[str, tuple[str, float | None]],
    service: dict[str, object] | None = None,
    analyst_options: dict[str, dict[str, object]] | None = None,
) -> Path:
    """Write a service TOML: ``tables`` as in the file format, ``analysts`` as name → (token, ε)
    (ε None: none written, e.g. for a ρ budget given in ``analyst_options``; plus
    ``analyst_options``: name → extra keys such as ``tables``, ``delta``, ``rho`` or ``rate_per_second``).

    Only the tokens' salted hashes are written. Used by tests and benchmarks to derive a
    config from ``examples/service.toml``'s tables with their own analysts and ledger.
    """
    from dpwitness.serve.auth import hash_token

    document: dict[str, object] = {
        "service": dict(service or {}),
        "tables": tables,
        "analysts": {
            name: {
                **({} if eps is None else {"epsilon": float(eps)}),
                "token_hash": hash_token(token),
                **(analyst_options or {}).get(name, {}),
            }
            for name, (token, eps) in analysts.items()
        },
    }
    target = Path(path)
    target.write_text(_toml(document), encoding="utf-8")
    return target


def _toml(document: dict[str, object], prefix: str = "") -> str:
    scalars = [f"{key} = {_toml_value(value)}" for key, value in document.items() if not isinstance(value, dict)]
    out = ([f"[{prefix}]"] if prefix and scalars else []) + scalars
    text = "\n".join(out) + ("\n\n" if out else "")
    for key, value in document.items():
        if isinstance(value, dict):
            text += _toml(value, f"{prefix}.{_toml_key(key)}" if prefix else _toml_key(key))
    return text


def _toml_key(key: str) -> str:
    return key if key.replace("_", "").replace("-", "").isalnum() else _toml_value(key)


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    text = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'
