"""Deferred dataclasses: processed on first construction or materialize(), and a cached run
never needs to process the rule schema."""

from __future__ import annotations

import dataclasses
import pickle
from dataclasses import field

import pytest

from helpers_cli import command_runs
from sglang_doctor._speed.deferred import deferred_dataclass, materialize


@deferred_dataclass(frozen=True, eq=False)
class Point:
    x: int
    tags: list[str] = field(default_factory=list)
    label: str = "p"


def test_first_construction_makes_the_dataclass():
    @deferred_dataclass(frozen=True, eq=False)
    class Point:
        x: int
        tags: list[str] = field(default_factory=list)
        label: str = "p"

    @deferred_dataclass(eq=False)
    class Untouched:
        a: int

    assert not dataclasses.is_dataclass(Point) and not dataclasses.is_dataclass(Untouched)
    p = Point(1)
    assert dataclasses.is_dataclass(Point) and (p.x, p.tags, p.label) == (1, [], "p")
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 2  # type: ignore[misc]
    assert not dataclasses.is_dataclass(Untouched)  # only the class that was built
    materialize(Untouched)
    assert dataclasses.is_dataclass(Untouched) and Untouched(3).a == 3


def test_instances_round_trip_through_pickle():
    p = Point(2, ["a"])
    q = pickle.loads(pickle.dumps(p))
    assert (q.x, q.tags, q.label) == (2, ["a"], "p") and q is not p


def test_a_cached_run_leaves_the_rule_schema_unprocessed(tmp_path):
    first, second = command_runs(tmp_path, "dataclasses.is_dataclass(rules.Rule), dataclasses.is_dataclass(rules.Pattern)",
                                 imports="import dataclasses\nfrom sglang_doctor.engine import rules")
    assert first.stderr.split()[-2:] == ["True", "True"]  # validated the files: pydantic needed them
    assert second.stderr.split()[-2:] == ["False", "False"]  # from the cache: never processed
    assert first.stdout == second.stdout and '"SGD401"' in second.stdout
