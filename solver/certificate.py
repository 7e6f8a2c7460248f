"""Re-export of :mod:`republish.certificate` (certificates are core data, shared by models)."""

from republish.certificate import Certificate, Status, combine

__all__ = ["Certificate", "Status", "combine"]
