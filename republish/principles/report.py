"""Verification reports: every violation, not just a yes/no."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Violation:
    """One violation: the group (or None for table-wide ones), the rows involved, why."""

    group: Any
    reason: str
    rows: tuple[Any, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        group = self.group.item() if hasattr(self.group, "item") else self.group
        return {"group": group, "reason": self.reason, "rows": [str(r) for r in self.rows]}


@dataclass(frozen=True)
class VerificationReport:
    """The outcome of a verifier: ``ok`` exactly when ``violations`` is empty."""

    principle: str
    violations: tuple[Violation, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return not self.violations

    def __bool__(self) -> bool:
        return self.ok

    def merge(
        self, *others: VerificationReport, principle: str | None = None
    ) -> VerificationReport:
        """Combine reports (e.g. the parts of a release verification)."""
        violations = list(self.violations)
        for other in others:
            violations.extend(other.violations)
        return VerificationReport(principle or self.principle, tuple(violations))

    def first(self) -> Violation | None:
        return self.violations[0] if self.violations else None

    def summary(self) -> str:
        if self.ok:
            return f"{self.principle}: OK"
        head = self.violations[0]
        more = f" (+{len(self.violations) - 1} more)" if len(self.violations) > 1 else ""
        return f"{self.principle}: violated in group {head.group}: {head.reason}{more}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "principle": self.principle,
            "violations": [v.to_dict() for v in self.violations],
        }


def report(principle: str, violations: Iterable[Violation]) -> VerificationReport:
    return VerificationReport(principle, tuple(violations))
