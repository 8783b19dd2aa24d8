"""Tracebacks the log says were handled (a failed request, a retried call, an exception Python
ignored) are not crashes: rules with `skip_handled` leave them alone, and still see a crash
next to them."""

from __future__ import annotations

from sglang_doctor.facts.context import Context
from sglang_doctor.pipeline.run import Options, diagnose


def _errors(text: str, rules) -> list[str]:
    rep = diagnose(["x.log"], rules, Options(), texts={"x.log": text}).report
    return [f.rule for f in rep.findings if f.severity == "error"]


TB = """Traceback (most recent call last):
  File "/usr/lib/python3/site-packages/foo/bar.py", line 10, in baz
    raise ValueError("boom")
ValueError: boom
"""


def test_a_bare_traceback_is_still_a_crash(rules):
    assert _errors(TB, rules) == ["crash-unrecognized"]


def test_a_traceback_after_error_in_request_is_one_requests(rules):
    text = "[2026-02-27 09:51:45] Error in request: boom\n" + TB
    assert _errors(text, rules) == []


def test_a_traceback_python_ignored_is_not_a_crash(rules):
    text = "Exception ignored in: <function Engine.__del__ at 0x7f00>\n" + TB
    assert _errors(text, rules) == []


def test_a_retried_attempt_is_not_a_crash(rules):
    text = TB + "retry() failed once (0th try, maximum 2 retries). Will delay 0.76s and retry. Error: boom\n"
    assert _errors(text, rules) == []


def test_a_crash_after_handled_tracebacks_is_still_reported(rules):
    handled = "".join(f"[2026-02-27 09:51:{i:02d}] Error in request: boom\n" + TB for i in range(8))
    text = handled + "[2026-02-27 09:52:00] Load weight begin. avail mem=20.00 GB\n\n" + TB.replace("boom", "crash")
    rep = diagnose(["x.log"], rules, Options(), texts={"x.log": text}).report
    found = [f for f in rep.findings if f.rule == "crash-unrecognized"]
    assert found and "crash" in found[0].explanation and found[0].occurrences == 1


def test_a_notice_far_from_the_traceback_does_not_count(rules):
    text = "[2026-02-27 09:51:45] Error in request: boom\n" + "[2026-02-27 09:51:46] Prefill batch.\n" * 5 + TB
    assert _errors(text, rules) == ["crash-unrecognized"]


def test_handled_near_window():
    ctx = Context()
    ctx.handled_lines = [10]
    assert ctx.handled_near(11, 20)  # the notice introduces the traceback
    assert ctx.handled_near(12, 20)  # ... with a blank line between
    assert not ctx.handled_near(13, 20)
    assert ctx.handled_near(5, 7)  # the notice follows it
    assert not ctx.handled_near(3, 6)


def test_follow_waits_for_the_notice_after_a_traceback(rules):
    from sglang_doctor.pipeline.follow import Follower

    seen: list[str] = []
    fol = Follower(rules, lambda f: seen.append(f.rule))
    fol.feed_bytes(TB.encode())
    assert seen == []  # the lines that may say it was handled have not come yet
    fol.feed_bytes(b"retry() failed once (0th try, maximum 2 retries). Will delay 0.76s and retry. Error: boom\n"
                   b"[2026-02-27 09:51:46] Load weight begin. avail mem=20.00 GB\n" * 3)
    fol.idle()
    assert "crash-unrecognized" not in seen
    fol.feed_bytes(b"\n" + TB.replace("boom", "crash").encode())
    fol.idle()  # the stream paused with signs of a failure no rule explains: the crash net says so now
    assert seen == ["crash-unrecognized"]
    report = fol.finish("x.log").report
    [crash] = [f for f in report.findings if f.rule == "crash-unrecognized"]
    assert "crash" in crash.explanation and "boom" not in crash.explanation  # the handled one is left out
