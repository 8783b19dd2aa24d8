"""The validated-rules cache: reused while the rule files are unchanged, rebuilt when they change,
harmless when stale, corrupt or unwritable."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rule_helpers import GOOD, write_rule
from sglang_doctor._speed import rulecache
from sglang_doctor.engine.rules import load_rules


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SGLANG_DOCTOR_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(rulecache, "MTIME_SLACK_S", 0.0)  # files written just now may be trusted


def _user_rule(tmp_path: Path) -> Path:
    text = GOOD.replace("id: my-rule", "id: cache-probe").replace("A user rule for a test", "A rule for the cache tests")
    return Path(write_rule(tmp_path, text, "cache-probe"))


def _titles(d: Path) -> set[str]:
    return {r.title for r in load_rules([str(d)], builtin=False)}


def _no_reads(monkeypatch) -> None:
    def refuse(self: Path) -> bytes:
        raise AssertionError(f"read {self}")

    monkeypatch.setattr(Path, "read_bytes", refuse)


def test_unchanged_files_are_not_read_again(tmp_path, monkeypatch):
    d = _user_rule(tmp_path)
    first = _titles(d)
    _no_reads(monkeypatch)  # the manifest vouches for the content digest; the cache file has the rules
    assert _titles(d) == first


def test_an_edited_rule_is_validated_again(tmp_path):
    d = _user_rule(tmp_path)
    _titles(d)
    f = next(d.rglob("cache-probe.yaml"))
    f.write_text(f.read_text().replace("A rule for the cache tests", "An edited rule title"))
    assert _titles(d) == {"An edited rule title"}


def test_an_edit_within_the_timestamp_resolution_is_seen(tmp_path, monkeypatch):
    monkeypatch.setattr(rulecache, "MTIME_SLACK_S", 3600.0)  # every file is "too young": no manifest
    d = _user_rule(tmp_path)
    f = next(d.rglob("cache-probe.yaml"))
    before = f.stat()
    _titles(d)
    text = f.read_text()
    f.write_text(text.replace("cache tests", "cache TESTS"))  # same size
    os.utime(f, ns=(before.st_atime_ns, before.st_mtime_ns))  # and the same mtime
    assert _titles(d) == {"A rule for the cache TESTS"}


def test_an_added_and_a_removed_rule_are_seen(tmp_path):
    d = _user_rule(tmp_path)
    family = next(d.rglob("cache-probe.yaml")).parent
    _titles(d)
    other = family / "cache-second.yaml"
    other.write_text(next(family.glob("cache-probe.yaml")).read_text()
                     .replace("id: cache-probe", "id: cache-second").replace("SGD1999", "SGD1998"))
    assert len(load_rules([str(d)], builtin=False)) == 2
    other.unlink()
    assert len(load_rules([str(d)], builtin=False)) == 1


def test_a_corrupt_cache_is_rebuilt(tmp_path):
    d = _user_rule(tmp_path)
    first = _titles(d)
    cache = tmp_path / "cache"
    for f in [*cache.glob("rules-*"), *cache.glob("manifest-*")]:
        f.write_bytes(b"\x80\x05 not a pickle")
    assert _titles(d) == first


def test_an_unwritable_cache_directory_still_loads(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache directory should be")
    monkeypatch.setenv("SGLANG_DOCTOR_CACHE", str(blocker / "cache"))
    d = _user_rule(tmp_path)
    assert _titles(d) == {"A rule for the cache tests"}
    assert _titles(d) == {"A rule for the cache tests"}  # again, with nothing cached


def test_the_builtin_rules_load_from_the_manifest(tmp_path, monkeypatch):
    n = len(load_rules())
    _no_reads(monkeypatch)
    assert len(load_rules()) == n


def test_cached_rules_match_the_validated_ones_field_by_field():
    fresh = {r.id: r for r in load_rules(cache=False)}
    load_rules()  # writes the cache
    cached = load_rules()
    assert all(isinstance(r, rulecache.LazyRule) for r in cached) and len(cached) == len(fresh)
    for lazy in cached:
        real = fresh[lazy.id]
        for name in (*rulecache.LazyRule.SUMMARY, "explanation", "fixes", "conditions", "let", "docs"):
            assert repr(getattr(lazy, name)) == repr(getattr(real, name)), (lazy.id, name)
        assert lazy.match.check == real.match.check
        assert [p.regex for p in lazy.match.any] == [p.regex for p in real.match.any]


def test_a_run_unpickles_only_the_rules_it_needs(tmp_path):
    from sglang_doctor.pipeline.run import diagnose

    demo = Path(__file__).resolve().parent.parent / "sglang_doctor" / "fixtures" / "demo"
    load_rules()
    rules = load_rules()
    run = diagnose([str(next(demo.glob("qwen3.6-27b-awq-dtype-crash.log")))], rules)
    assert "SGD401" in {f.code for f in run.report.findings}
    unpickled = sum(r._rule is not None for r in rules)
    assert 0 < unpickled < len(rules) / 3, unpickled


def test_a_cached_rule_is_read_only_and_pickles_as_itself():
    import pickle

    load_rules()
    rule = load_rules()[0]
    with pytest.raises(AttributeError):
        rule.severity = "info"
    back = pickle.loads(pickle.dumps(rule))
    assert isinstance(back, rulecache.LazyRule) and back.id == rule.id and back.title == rule.title


def test_the_cache_directory_is_pruned(tmp_path, monkeypatch):
    """Entries no run has read for a month and temporary files a killed run left go at the next write;
    reading an entry keeps it."""
    import os
    import time

    from helpers_cli import DEMO_LOG, run
    from sglang_doctor._speed.cachefiles import MAX_AGE_S, read_trusted

    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    old = time.time() - MAX_AGE_S - 86400
    for name in ("rules-0ld.marshal", "manifest-0ld.marshal", "scan-0ld.db", "re-0ld.marshal", ".tmp-killed",
                 "rules-used.marshal", "notes.txt"):
        (cache / name).write_bytes(b"x")
        os.utime(cache / name, (old, old))
    (cache / ".tmp-writing-now").write_bytes(b"x")
    assert read_trusted(str(cache / "rules-used.marshal")) == b"x"  # a run read it: in use
    rules_dir = tmp_path / "rules" / "test"
    rules_dir.mkdir(parents=True)
    (rules_dir / "my-rule.yaml").write_text(__import__("rule_helpers").GOOD)
    r = run(["--rules", str(tmp_path / "rules"), "--format", "json", str(DEMO_LOG)],
            env={"SGLANG_DOCTOR_CACHE": str(cache)})  # a new rule set: the rule cache is written
    assert r.exit_code == 1
    left = {p.name for p in cache.iterdir()}
    assert not left & {"rules-0ld.marshal", "manifest-0ld.marshal", "scan-0ld.db", "re-0ld.marshal", ".tmp-killed"}
    assert {"rules-used.marshal", ".tmp-writing-now", "notes.txt"} <= left  # (not ours: left alone)
    assert any(n.startswith("rules-") and n != "rules-used.marshal" for n in left)
