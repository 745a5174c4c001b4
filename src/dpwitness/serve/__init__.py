"""``dpwitness serve``: a differentially private query service over HTTP.

* :mod:`~dpwitness.serve.config`: the TOML config (tables, public bounds and categories, analysts);
* :mod:`~dpwitness.serve.app`: the FastAPI app (``create_app``); every answer goes through
  :class:`dpwitness.session.Session`;
* :mod:`~dpwitness.serve.ledger`: group commit onto the SQLite budget ledger;
* :mod:`~dpwitness.serve.client`: ``Client(url, token)``;
* :mod:`~dpwitness.serve.attack`: the differencing attack against a live service.

The web framework is imported only by the app and client modules (``[web]`` extra).
"""

from dpwitness.serve.auth import hash_token, new_token
from dpwitness.serve.config import ServiceConfig, load_config

__all__ = ["ServiceConfig", "hash_token", "load_config", "new_token"]
