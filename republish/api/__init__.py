"""The pandas-style Python API (``import republish``; README, "Python").

* :class:`Store` (:mod:`republish.api.store`): ``Store.create(path, schema, m=...)``,
  ``Store.open(path)``, ``store.release(df) -> Release``, ``store.verify()``,
  ``store.history() -> DataFrame``;
* :func:`l_diverse`, :func:`check`, :func:`audit` (:mod:`republish.api.static`; at the
  package root it is ``republish.run_audit``, since ``republish.audit`` is the audit
  subpackage);
* the defaults shared with the CLI: :mod:`republish.api.defaults` (light: the CLI reads it
  at start-up).

This package sits above the solver and below the CLI (tests/test_layers.py): the CLI
calls it, the core never imports it. Its names are loaded on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Public names -> module.
_NAMES = {
    "LDiverseTable": "republish.api.static",
    "audit": "republish.api.static",
    "check": "republish.api.static",
    "l_diverse": "republish.api.static",
    "Release": "republish.api.store",
    "ReleaseWarning": "republish.api.store",
    "Store": "republish.api.store",
    "ShareWarning": "republish.api.shares",
    "VerifyReport": "republish.api.verification",
}


def __getattr__(name: str) -> Any:
    if name in _NAMES:
        return getattr(importlib.import_module(_NAMES[name]), name)
    raise AttributeError(f"module 'republish.api' has no attribute {name!r}")


__all__ = sorted(_NAMES)
