"""How the store commands print: rich tables for people (never cut when piped: the
consoles are 200 columns wide there), CSV for scripts, certificate lines."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.table import Table

__all__ = ["certificate_text", "print_csv", "rich_table"]


def print_csv(rows: list[dict[str, Any]]) -> None:
    """Rows as CSV on stdout: every key of any row, in first-seen order; None empty."""
    import csv
    import sys

    columns: list[str] = []
    for row in rows:
        columns.extend(key for key in row if key not in columns)
    writer = csv.DictWriter(sys.stdout, columns, lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: "" if v is None else v for k, v in row.items()})


def certificate_text(summary: dict[str, Any]) -> str:
    """One line: the release's status and, for a lexicographic objective, both stages."""
    if summary.get("cost_status") is None:
        return (f"certificate: {summary['status']}, objective {_cell(summary['objective'])}, "
                f"bound {_cell(summary['bound'])}, gap {_cell(summary['gap'])}")
    name = str(summary.get("objective_name") or "")
    first, _, second = name.partition(", then ")
    text = (f"certificate: release {summary['status']}; (a) {first} = "
            f"{_cell(summary['objective'])} ({summary['counts_status']}, bound "
            f"{_cell(summary['bound'])}); (b) {second} = {_cell(summary['cost'])} "
            f"({summary['cost_status']}, bound {_cell(summary['cost_bound'])}, gap "
            f"{_cell(summary['cost_gap'])})")
    if summary.get("within_status") is not None:  # never the release's status
        text += (f"; {summary['within']}, (b) {summary['within_status']} (bound "
                 f"{_cell(summary['within_bound'])}, gap {_cell(summary['within_gap'])})")
    return text


#: Table headers (docs/formats.md names each column's field).
_HEADERS = {
    "release": "n", "deleted": "deleted", "reinserted": "re-inserted",
    "mean_perimeter": "mean perimeter", "ncp": "NCP", "wall_time_s": "time s",
    "counts_status": "(a) status", "objective": "(a)", "bound": "(a) bound",
    "cost_status": "(b) status", "cost": "(b)", "cost_bound": "(b) bound", "cost_gap": "(b) gap",
    "within_status": "(b) status within policy", "within_gap": "(b) gap within policy",
}


def rich_table(title: str, rows: list[dict[str, Any]], keys: list[str]) -> Table:
    from rich import box
    from rich.table import Table

    table = Table(title=title, box=box.SIMPLE_HEAD, padding=(0, 0), pad_edge=False,
                  show_edge=False)
    for key in keys:
        table.add_column(_HEADERS.get(key, key), justify="right", no_wrap=True)
    for row in rows:
        table.add_row(*(_cell(row.get(key)) for key in keys))
    return table


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)
