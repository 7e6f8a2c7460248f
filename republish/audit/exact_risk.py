"""Exact privacy disclosure risk of small release sequences (m-invariance paper, §3.1).

``risk(t) = n_breach(t) / n_total`` (Definition 14), where ``n_total`` counts the
reasonable surjections from the generalized historical union ``U*(n)`` to the knowledge
table ``B(n)`` (Definitions 10 and 13) and ``n_breach(t)`` those reconstructing ``t``'s
true sensitive value.

A reasonable surjection is, release by release, a bijection between the rows of ``T*(j)``
and the rows of ``B(n)`` alive at ``j`` (the tuples containing release ``j`` and the
counterfeits of ``R(j)``): Condition 3.1 and 1.2 give one row per release of the lifespan,
3.2 pins counterfeit ``b_c`` to its group, 3.3 asks the row's box to cover the tuple, 1.1
gives the tuple one sensitive value across its rows, and Condition 2 asks the
reconstructed generalization to obey the deployed principle:

* ``none`` (k-anonymity, l-diversity, any per-table principle): the published tables
  fix every QI group, so the condition holds for every surjection when it holds at all;
* ``m-invariance`` (Definition 17): every ``T*(j)`` m-unique and the groups hosting a
  tuple in the releases containing it share one signature.

Counting: a tuple's *choice* is its sensitive value and one (group, value) cell per
release; the rows behind a cell are interchangeable, so choosing one multiplies by the
cell's remaining count. A group takes ``|G| - R(j)[G]`` tuples and its remaining rows go
to its counterfeits in ``R(j)[G]!`` ways. Tuples are processed in a fixed order by a
forward/backward dynamic program over the remaining cell counts, which yields
``n_total`` and, for every tuple and value, the number of surjections reconstructing that
value. The program refuses inputs above ``max_individuals`` tuples or ``max_states``
states instead of running without bound.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Literal

import numpy as np
import pandas as pd

from republish.audit.knowledge import Knowledge
from republish.errors import InputError, ParameterError
from republish.generalization import parse_boxes
from republish.release import COUNT, GROUP, Release

Principle = Literal["auto", "m-invariance", "none"]
PRINCIPLES: tuple[str, ...] = ("auto", "m-invariance", "none")

State = tuple[int, ...]


@dataclass(frozen=True)
class ExactRisk:
    """Counts of reasonable surjections; ``counts[i][k]`` reconstruct ``values[k]`` for
    tuple ``identifiers[i]``. ``truth`` holds the true values when known."""

    principle: str
    identifiers: tuple[str, ...]
    values: tuple[str, ...]
    total: int
    counts: tuple[tuple[int, ...], ...]
    truth: tuple[str, ...] | None
    note: str = ""

    def posterior(self, index: int) -> dict[str, Fraction]:
        """Share of reasonable surjections reconstructing each value for tuple ``index``."""
        if self.total == 0:
            return {}
        return {
            value: Fraction(count, self.total)
            for value, count in zip(self.values, self.counts[index], strict=True)
            if count
        }

    def risk(self, index: int) -> Fraction | None:
        """Definition 14 for tuple ``index`` (None without true values or surjections)."""
        if self.truth is None or self.total == 0:
            return None
        return self.posterior(index).get(self.truth[index], Fraction(0))

    def risks(self) -> dict[str, Fraction]:
        """Identifier -> risk, when the true values are known."""
        out: dict[str, Fraction] = {}
        for index, identifier in enumerate(self.identifiers):
            value = self.risk(index)
            if value is not None:
                out[identifier] = value
        return out

    def max_posterior(self) -> Fraction | None:
        """Largest share any value gets for any tuple: bounds every ``risk(t)``."""
        if self.total == 0:
            return None
        return Fraction(max((max(row) for row in self.counts), default=0), self.total)

    def max_risk(self) -> Fraction | None:
        """Largest ``risk(t)`` with true values, else :meth:`max_posterior`."""
        if self.truth is None:
            return self.max_posterior()
        risks = self.risks()
        return max(risks.values(), default=None)


@dataclass(frozen=True)
class _Group:
    release: int
    label: object
    low: np.ndarray
    high: np.ndarray
    values: Counter[str]
    counterfeits: int

    @property
    def signature(self) -> frozenset[str]:
        return frozenset(self.values)

    @property
    def capacity(self) -> int:
        return sum(self.values.values()) - self.counterfeits


def _groups_of(
    release: int, published: pd.DataFrame, counterfeits: pd.DataFrame | None, knowledge: Knowledge
) -> list[_Group]:
    schema = knowledge.schema
    low, high = parse_boxes(published, schema)
    fakes: dict[object, int] = {}
    if counterfeits is not None and len(counterfeits):
        fakes = {
            g: int(c)
            for g, c in zip(counterfeits[GROUP].tolist(), counterfeits[COUNT].tolist(), strict=True)
        }
    labels = published[GROUP].tolist()
    unknown = set(fakes) - set(labels)
    if unknown:
        raise InputError(f"R({release + 1}) names group(s) {sorted(map(str, unknown))} absent "
                         f"from T*({release + 1}).")
    groups = []
    sensitive = published[schema.sensitive].astype(str).str.strip().tolist()
    for label in dict.fromkeys(labels):
        rows = [i for i, g in enumerate(labels) if g == label]
        if not (np.all(low[rows] == low[rows[0]]) and np.all(high[rows] == high[rows[0]])):
            raise InputError(f"T*({release + 1}) group {label}: rows carry different QI boxes; "
                             "a QI group shares one generalization (Definition 2, Property 4).")
        values = Counter(sensitive[i] for i in rows)
        if fakes.get(label, 0) > len(rows):
            raise InputError(f"R({release + 1}) gives group {label} {fakes[label]} counterfeits "
                             f"but it has {len(rows)} rows.")
        groups.append(_Group(release, label, low[rows[0]], high[rows[0]], values,
                             fakes.get(label, 0)))
    return groups


def _choices(
    point: np.ndarray, lifespan: list[int], groups: list[list[_Group]], invariant: bool
) -> list[tuple[str, tuple[_Group, ...]]]:
    """(value, one hosting group per release of the lifespan) the tuple can take."""
    covering = [
        [g for g in groups[j] if np.all(g.low <= point) and np.all(point <= g.high)]
        for j in lifespan
    ]
    values = sorted(set().union(*[set(g.values) for per in covering for g in per]))
    out: list[tuple[str, tuple[_Group, ...]]] = []
    for value in values:
        hosts = [[g for g in per if g.values[value] > 0] for per in covering]
        for combination in itertools.product(*hosts):
            if invariant and len({g.signature for g in combination}) > 1:
                continue
            out.append((value, tuple(combination)))
    return out


def exact_risk(
    releases: Sequence[pd.DataFrame | Release],
    knowledge: Knowledge,
    counterfeits: Sequence[pd.DataFrame | None] | None = None,
    principle: Principle = "auto",
    max_individuals: int = 60,
    max_states: int = 400_000,
) -> ExactRisk:
    """Count reasonable surjections and per-tuple reconstructions (Definitions 13–14).

    ``counterfeits[j]`` is ``R(j + 1)`` (None: no counterfeits); taken from the
    :class:`Release` objects when omitted. ``principle="auto"`` assumes m-invariance when
    every release is m-unique (m ≥ 2) and falls back to ``none`` when no surjection obeys
    it (the adversary then knows m-invariance was not what produced the sequence).

    Raises
    ------
    ParameterError
        on an unknown principle, or when the input exceeds ``max_individuals`` tuples or
        the dynamic program exceeds ``max_states`` states (exact counting is exponential).
    InputError
        when the releases, ``R(j)`` and the knowledge table cannot all be true at once.
    """
    if principle not in PRINCIPLES:
        raise ParameterError(f"principle={principle!r}; use one of {list(PRINCIPLES)}.")
    if max_individuals < 1 or max_states < 1:
        raise ParameterError("max_individuals and max_states must be positive.")
    if len(releases) != knowledge.release_count:
        raise InputError(f"{len(releases)} release(s) given but the knowledge table describes "
                         f"{knowledge.release_count}.")
    rows = np.flatnonzero(knowledge.presence.any(axis=1))
    if len(rows) > max_individuals:
        raise ParameterError(
            f"exact risk counts surjections exhaustively; {len(rows)} tuples exceed "
            f"max_individuals={max_individuals}. Audit a shorter or smaller sequence, or use "
            "the intersection attack (Lemma 1) for large ones."
        )
    if counterfeits is None:
        counterfeits = [r.counterfeits if isinstance(r, Release) else None for r in releases]
    if len(counterfeits) != len(releases):
        raise InputError(f"{len(counterfeits)} counterfeit tables for {len(releases)} releases.")
    frames = [r.published if isinstance(r, Release) else r for r in releases]
    groups = [_groups_of(j, frames[j], counterfeits[j], knowledge) for j in range(len(frames))]
    for j, per in enumerate(groups):
        alive = int(knowledge.presence[:, j].sum())
        capacity = sum(g.capacity for g in per)
        if alive != capacity:
            raise InputError(
                f"release {j + 1}: T*({j + 1}) minus R({j + 1}) leaves {capacity} real rows but "
                f"the knowledge table lists {alive} tuples in it; no surjection exists."
            )
    m_unique = all(
        max(g.values.values()) == 1 and sum(g.values.values()) >= 2 for per in groups for g in per
    )
    if principle == "m-invariance" and not m_unique:
        raise ParameterError(
            "principle='m-invariance' but some published group repeats a sensitive value or "
            "has one row: the tables are not m-unique (Definition 17); use principle='none'."
        )
    tried = {
        "m-invariance": ["m-invariance"],
        "none": ["none"],
        "auto": ["m-invariance", "none"] if m_unique else ["none"],
    }[principle]
    codes = knowledge.codes()
    result: ExactRisk | None = None
    for name in tried:
        result = _count(knowledge, rows, codes, groups, name == "m-invariance", max_states, name)
        if result.total > 0:
            break
    assert result is not None
    if principle == "auto" and len(tried) == 2 and result.principle == "none":
        result = replace(result, note=(
            "no surjection keeps every tuple's signature, so the sequence is not m-invariant "
            "and the adversary counts surjections without that condition."
        ))
    return result


def _take(
    state: State, cell_ids: tuple[int, ...], slot_ids: tuple[int, ...]
) -> tuple[int, State] | None:
    """Place one tuple: the number of ways (a row of each cell) and the next state."""
    weight = 1
    for c in cell_ids:
        weight *= state[c]
    if weight == 0 or any(state[s] == 0 for s in slot_ids):
        return None
    new = list(state)
    for c in cell_ids:
        new[c] -= 1
    for s in slot_ids:
        new[s] -= 1
    return weight, tuple(new)


def _count(
    knowledge: Knowledge,
    rows: np.ndarray,
    codes: np.ndarray,
    groups: list[list[_Group]],
    invariant: bool,
    max_states: int,
    name: str,
) -> ExactRisk:
    cells: dict[tuple[int, int, str], int] = {}
    slots: dict[tuple[int, int], int] = {}
    initial: list[int] = []
    capacities: list[int] = []
    for j, per in enumerate(groups):
        for position, group in enumerate(per):
            slots[j, position] = len(capacities)
            capacities.append(group.capacity)
            for value, count in sorted(group.values.items()):
                cells[j, position, value] = len(initial)
                initial.append(count)
    position_of = {id(g): (g.release, p) for per in groups for p, g in enumerate(per)}
    values = tuple(sorted({v for per in groups for g in per for v in g.values}))
    value_index = {v: k for k, v in enumerate(values)}
    offset = len(initial)

    # Each choice: (value index, cell positions, capacity positions in the state vector).
    choices: list[list[tuple[int, tuple[int, ...], tuple[int, ...]]]] = []
    for row in rows:
        lifespan = [int(j) for j in np.flatnonzero(knowledge.presence[row])]
        per_tuple = []
        for value, hosts in _choices(codes[row], lifespan, groups, invariant):
            keys = [position_of[id(g)] for g in hosts]
            per_tuple.append((
                value_index[value],
                tuple(cells[j, p, value] for j, p in keys),
                tuple(offset + slots[j, p] for j, p in keys),
            ))
        choices.append(per_tuple)
    order = sorted(range(len(rows)), key=lambda i: min((c[1] for c in choices[i]), default=()))

    # Frontier: once no later tuple can use a coordinate, a group's capacity must be spent
    # (else no completion) and a cell's count no longer matters; zeroing both merges states.
    last_use = [-1] * (offset + len(capacities))
    for position, i in enumerate(order):
        for _, cell_ids, slot_ids in choices[i]:
            for coordinate in (*cell_ids, *slot_ids):
                last_use[coordinate] = position
    retire: list[list[int]] = [[] for _ in range(len(order) + 1)]
    for coordinate, position in enumerate(last_use):
        retire[position + 1].append(coordinate)

    def settle(state: State, position: int) -> State | None:
        if any(state[c] for c in retire[position] if c >= offset):
            return None
        if not retire[position]:
            return state
        new = list(state)
        for c in retire[position]:
            new[c] = 0
        return tuple(new)

    def advance(state: State, cell_ids: tuple[int, ...], slot_ids: tuple[int, ...],
                position: int) -> tuple[int, State] | None:
        step = _take(state, cell_ids, slot_ids)
        if step is None:
            return None
        settled = settle(step[1], position + 1)
        return None if settled is None else (step[0], settled)

    start = settle((*initial, *capacities), 0)
    layers: list[dict[State, int]] = [{start: 1} if start is not None else {}]
    states = 1
    for position, i in enumerate(order):
        nxt: dict[State, int] = defaultdict(int)
        for state, ways in layers[-1].items():
            for _, cell_ids, slot_ids in choices[i]:
                step = advance(state, cell_ids, slot_ids, position)
                if step is not None:
                    nxt[step[1]] += ways * step[0]
        layers.append(dict(nxt))
        states += len(nxt)
        if states > max_states:
            raise ParameterError(
                f"exact risk: the dynamic program exceeded max_states={max_states} after "
                f"{len(layers) - 1} of {len(rows)} tuples; the sequence is too large to count "
                "exactly (raise max_states or audit fewer tuples)."
            )
    backward = {s: 1 for s in layers[-1] if not any(s[offset:])}
    counts = [[0] * len(values) for _ in rows]
    for position in range(len(order) - 1, -1, -1):
        i = order[position]
        current: dict[State, int] = defaultdict(int)
        for state, ways in layers[position].items():
            for value_code, cell_ids, slot_ids in choices[i]:
                step = advance(state, cell_ids, slot_ids, position)
                rest = backward.get(step[1], 0) if step is not None else 0
                if step is not None and rest:
                    current[state] += step[0] * rest
                    counts[i][value_code] += ways * step[0] * rest
        backward = current
    # Counterfeit identities are distinct rows of B(n): c! ways per group, for every count.
    factor = math.prod(math.factorial(g.counterfeits) for per in groups for g in per)
    total = backward.get(start, 0) * factor if start is not None else 0
    truth = knowledge.truth
    return ExactRisk(
        principle=name,
        identifiers=tuple(str(x) for x in knowledge.identifiers[rows]),
        values=values,
        total=total,
        counts=tuple(tuple(c * factor for c in row) for row in counts),
        truth=tuple(str(truth[r]) for r in rows) if truth is not None else None,
    )
