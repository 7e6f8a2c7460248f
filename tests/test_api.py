"""The Python API: one import gives the publishing functions, with the CLI's defaults."""

from __future__ import annotations

import numpy as np

import republish
from republish.examples.hospital import load_hospital


def test_every_public_name_resolves() -> None:
    for name in republish.__all__:
        assert getattr(republish, name) is not None, name
    assert set(republish.__all__) <= set(dir(republish))


def test_a_release_sequence_through_the_facade(tmp_path) -> None:
    hospital = load_hospital()
    first = republish.publish_m_invariant(hospital.t1, hospital.schema, 2,
                                          rng=np.random.default_rng(0))
    # The library's default is the CLI's: auto (exact models on small releases).
    assert first.certificate.status == "OPTIMAL"
    with republish.ReleaseStore.init(tmp_path / "s.db", hospital.schema, 2) as store:
        step = republish.publish(hospital.t1, hospital.schema, "m-invariance",
                                 republish.principle("m-invariance").options_from_dict({"m": 2}),
                                 store.state(), solve=republish.SolveOptions("heuristic"),
                                 rng=np.random.default_rng(0))
        store.append_step(step)
        assert store.last_release == 1 and step.certificate.status == "HEURISTIC"
