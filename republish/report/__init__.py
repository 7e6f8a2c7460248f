"""Reports on published data: the figures of every release of a store
(:mod:`republish.report.series`), the achieved k and l and the re-identification risk of
any published table (:mod:`republish.report.risk`), and the report page
(:mod:`republish.report.html`). Definitions: ``docs/report.md``."""

from __future__ import annotations

from republish.report.html import ReportFiles, deferred_path, write_deferred, write_report
from republish.report.risk import DEFAULT_RISK_THRESHOLD, TableRisk, table_risk
from republish.report.series import StoreReport, intersection_series, store_report

__all__ = [
    "DEFAULT_RISK_THRESHOLD",
    "ReportFiles",
    "StoreReport",
    "TableRisk",
    "deferred_path",
    "intersection_series",
    "store_report",
    "table_risk",
    "write_deferred",
    "write_report",
]
