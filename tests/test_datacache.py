"""Data derived from the package's data files alone, kept across runs (_speed/datacache.py): the same
value as computing it, recomputed when the file's text changes, and never trusted when corrupt."""

from __future__ import annotations

import pytest

from sglang_doctor._speed import datacache


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SGLANG_DOCTOR_CACHE", str(tmp_path))
    return tmp_path


def test_a_value_is_made_once_then_read_back(cache):
    made = []

    def make():
        made.append(1)
        return {"rows": [1, 2, 3], "name": "x"}

    first = datacache.derived(("a", "b"), "thing", make)
    second = datacache.derived(("a", "b"), "thing", make)
    assert first == second == {"rows": [1, 2, 3], "name": "x"} and made == [1]
    assert len(list(cache.glob("data-*.marshal"))) == 1


@pytest.mark.parametrize("other", [(("a", "c"), "thing"), (("a", "b"), "other-thing"), (("ab",), "thing")],
                         ids=["edited-file", "another-derivation", "joined-texts"])
def test_another_text_or_derivation_is_another_entry(cache, other):
    datacache.derived(("a", "b"), "thing", lambda: 1)
    assert datacache.derived(other[0], other[1], lambda: 2) == 2


def test_a_corrupt_entry_is_made_again(cache):
    datacache.derived("text", "thing", lambda: [1, 2])
    next(cache.glob("data-*.marshal")).write_bytes(b"\xff\x00junk")
    assert datacache.derived("text", "thing", lambda: [3]) == [3]


def test_the_flag_catalog_reads_the_same_through_the_cache(cache):
    import json

    from sglang_doctor.registry import flags, spelling

    raw = json.loads(flags.catalog_text())
    assert datacache.packaged_json(flags.catalog_text()) == raw  # made
    assert datacache.packaged_json(flags.catalog_text()) == raw  # read back
    assert spelling._replacements() == spelling._replacements_made()
