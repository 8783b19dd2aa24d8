"""The corrected command parses on every release it is meant for (issue 16): the repair of what a
release's parser refuses (fix/validity.py), wired into the fix stage (fix/correct.py).

The real parsers check the same in tests/test_real_parser.py (marker realparser); these run on the
flag registry, in the quick path.
"""

from __future__ import annotations

import pytest

from sglang_doctor.fix.correct import correct, recommended
from sglang_doctor.fix.validity import problems, repair
from sglang_doctor.launch.command import parse_command, render
from sglang_doctor.model import Finding, FixOut
from sglang_doctor.registry.spelling import target_releases

LAUNCH = "python3 -m sglang.launch_server --model-path m"


def finding(*fixes: FixOut, severity: str = "error") -> Finding:
    return Finding(rule="r", code="SGD000", severity=severity, title="t", explanation="e", fixes=list(fixes))  # type: ignore[arg-type]


def flag(name: str, value: str | None = None, action: str | None = None, **kw) -> FixOut:
    return FixOut(kind="flag", flag=name, value=value, action=action or ("set" if value else "add"), **kw)  # type: ignore[arg-type]


def fixed(cmd: str, version: str, *fixes: FixOut) -> tuple[str, list[str]]:
    found = correct(cmd, [finding(*fixes)], version=version)
    assert found is not None
    return render(found.command), found.releases


def test_inferred_range_keeps_the_spelling_every_release_takes() -> None:
    # 0.4.4-0.5.19: --cuda-graph-max-bs-decode is 0.5.14+ only; the old name is taken by all of them
    cmd, rels = fixed(f"{LAUNCH} --cuda-graph-max-bs 160", "0.4.4-0.5.19", flag("--cuda-graph-max-bs", "80", "lower"))
    assert cmd == f"{LAUNCH} --cuda-graph-max-bs 80"
    assert rels == target_releases("0.4.4-0.5.19")
    assert problems(parse_command(cmd), rels) == []


def test_a_fix_only_newer_releases_take_narrows_the_command_and_says_so() -> None:
    found = correct(LAUNCH, [finding(flag("--cuda-graph-backend-prefill", "disabled"))], version="0.4.0-0.5.23")
    assert found is not None and found.narrowed
    assert render(found.command) == f"{LAUNCH} --cuda-graph-backend-prefill disabled"
    assert found.releases[-1] == "0.5.23" and found.releases[0] != "0.4.0"
    assert problems(found.command, found.releases) == []
    assert problems(found.command, target_releases("0.4.0-0.5.23"))  # (the older ones do refuse it)


def test_a_newer_spelling_replaces_the_old_one_when_narrowed() -> None:
    # --cuda-graph-max-bs is gone from 0.5.20: the newest releases get the -decode spelling
    found = correct(LAUNCH, [finding(flag("--cuda-graph-max-bs", "512", "raise"))], version="0.4.0-0.5.23")
    assert found is not None and found.narrowed
    assert render(found.command) == f"{LAUNCH} --cuda-graph-max-bs-decode 512"
    assert problems(found.command, found.releases) == []


def test_first_fix_without_a_value_gives_way_to_the_next_with_one() -> None:
    f = finding(flag("--disaggregation-ib-device", None, "set"), flag("--disaggregation-transfer-backend", "nixl"))
    assert [x.flag for x in recommended(f)] == ["--disaggregation-transfer-backend"]
    cmd, _ = fixed(f"{LAUNCH} --disaggregation-transfer-backend mooncake", "0.5.14", *f.fixes)
    assert cmd == f"{LAUNCH} --disaggregation-transfer-backend nixl"


def test_no_command_fix_for_a_package_root_cause() -> None:
    f = finding(FixOut(kind="package", name="torch", action="set"), flag("--disable-cuda-graph"))
    assert recommended(f) == []
    assert correct(LAUNCH, [f], version="0.5.14") is None


@pytest.mark.parametrize("version", ["0.5.14", "0.5.23"])
def test_every_unknown_flag_is_fixed(version: str) -> None:
    new, found = repair(parse_command(f"{LAUNCH} --tp-szie 1 --enable-ep-moe"), target_releases(version))
    assert [(p.kind, p.flag) for p in found] == [("unknown", "--tp-szie"), ("unknown", "--enable-ep-moe")]
    assert render(new) == f"{LAUNCH} --tp-size 1 --ep-size 1"  # ep-size takes the tp size, as the old switch did
    assert problems(new, target_releases(version)) == []


def test_deprecated_switch_gets_its_full_replacement_with_values() -> None:
    new, found = repair(parse_command(f"{LAUNCH} --disable-cuda-graph --port 1"), ["0.5.23"])
    assert [p.kind for p in found] == ["deprecated"]
    # both phases, each with its value, where the old switch stood
    assert render(new) == f"{LAUNCH} --cuda-graph-backend-decode disabled --cuda-graph-backend-prefill disabled --port 1"


def test_deprecated_switch_kept_where_a_target_lacks_the_replacement() -> None:
    new, found = repair(parse_command(f"{LAUNCH} --disable-cuda-graph"), target_releases("0.4.4-0.5.19"))
    assert found == []
    assert render(new) == f"{LAUNCH} --disable-cuda-graph"


def test_ambiguous_abbreviation_written_out() -> None:
    new, found = repair(parse_command(f"{LAUNCH} --cuda-graph-max-bs 8"), ["0.5.23"])
    assert [p.kind for p in found] == ["ambiguous"]
    assert render(new) == f"{LAUNCH} --cuda-graph-max-bs-decode 8"


def test_what_no_finding_fixes_is_repaired_too() -> None:
    # the fix is the fraction; 0.5.23 also refuses the abbreviation (ambiguous) and a switch given a value
    found = correct(f"{LAUNCH} --cuda-graph-max-bs 8 --mem-fraction-static 0.9 --trust-remote-code=true", [
        finding(flag("--mem-fraction-static", "0.8", "lower"))], version="0.5.23")
    assert found is not None
    assert render(found.command) == f"{LAUNCH} --cuda-graph-max-bs-decode 8 --mem-fraction-static 0.8 --trust-remote-code"
    assert [p.kind for p in found.problems] == ["ambiguous", "switch-value"]


def test_no_command_when_the_root_cause_is_a_package() -> None:
    # an ABI mismatch (a package fix) with an unrelated warning's flag change: no "corrected" command
    abi = finding(FixOut(kind="package", name="sgl-kernel", action="set"), flag("--disable-custom-all-reduce"))
    warn = finding(flag("--mem-fraction-static", "0.8", "lower"), severity="warning")
    assert correct(f"{LAUNCH} --mem-fraction-static 0.9", [abi, warn], version="0.5.14") is None


def test_a_command_without_the_root_cause_fix_is_only_suggested() -> None:
    # the root cause's fix is a docker option, the command is no docker run: only the warning's change is in it
    root = finding(FixOut(kind="docker", flag="--shm-size", action="set", value="16g"))
    warn = finding(flag("--mem-fraction-static", "0.8", "lower"), severity="warning")
    found = correct(f"{LAUNCH} --mem-fraction-static 0.9", [root, warn], version="0.5.14")
    assert found is not None and found.kind == "suggested"
    found = correct(f"docker run img {LAUNCH} --mem-fraction-static 0.9", [root, warn], version="0.5.14")
    assert found is not None and found.kind == "corrected"
