"""Every output format on the bundled demo logs: SARIF against the OASIS schema, GitHub
workflow commands and their escaping, Markdown, JUnit XML, redaction and exit codes."""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers_cli import isolate, run
from sglang_doctor.model import Evidence, Finding, FixOut, InputInfo, Report
from sglang_doctor.report import FORMATS
from sglang_doctor.report import github as gh
from sglang_doctor.report.markdown import render as render_markdown
from sglang_doctor.report.sarif import DOCS_BASE_URL, sarif_log

DATA = Path(__file__).resolve().parent / "data"
DEMO = Path(__file__).resolve().parent.parent / "sglang_doctor" / "fixtures" / "demo"
DEMO_LOGS = sorted(DEMO.glob("*.log"))
SK = "sk-live-9f8e7d6c5b4a3210ZZyy"
HF = "hf_AbCdEfGhIjKlMnOpQrStUv"


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    """No config, baseline or GitHub environment from the machine running the tests."""
    isolate(tmp_path, monkeypatch)
    for var in ("GITHUB_STEP_SUMMARY", "GITHUB_WORKSPACE", "SGLANG_DOCTOR_DOCS_URL"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(scope="module")
def sarif_validator():
    schema = json.loads((DATA / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema)


def _copy_demo(tmp_path: Path, name: str = "qwen3.6-27b-awq-dtype-crash.log") -> Path:
    dst = tmp_path / name
    shutil.copy(DEMO / name, dst)
    return dst


def _json(args) -> dict:
    r = run(["--format", "json", *args])
    return json.loads(r.stdout)


# --- SARIF ---------------------------------------------------------------------------


@pytest.mark.parametrize("log", DEMO_LOGS, ids=lambda p: p.name)
def test_sarif_is_schema_valid_and_matches_the_json_report(tmp_path, sarif_validator, log):
    local = _copy_demo(tmp_path, log.name)
    r = run(["--format", "sarif", local.name])
    doc = json.loads(r.stdout)
    errors = sorted(sarif_validator.iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors[:5]]
    report = _json([local.name])
    sarif_run = doc["runs"][0]
    assert doc["version"] == "2.1.0"
    results = sarif_run["results"]
    assert [res["ruleId"] for res in results] == [f["code"] for f in report["findings"]]
    rules = sarif_run["tool"]["driver"]["rules"]
    assert len({d["id"] for d in rules}) == len(rules) == len({f["code"] for f in report["findings"]})
    for res, f in zip(results, report["findings"]):
        desc = rules[res["ruleIndex"]]
        assert desc["id"] == res["ruleId"] == f["code"] and desc["name"] == f["rule"]
        assert res["level"] == {"error": "error", "warning": "warning", "info": "note"}[f["severity"]]
        assert desc["helpUri"] == DOCS_BASE_URL + f"docs/rules/{f['code']}-{f['rule']}.md"
        assert desc["helpUri"].startswith("https://")
        assert desc["shortDescription"]["text"] == f["title"]
        assert desc["fullDescription"]["text"] and desc["help"]["text"]
        loc = res["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"] == {"uri": local.name, "uriBaseId": "SRCROOT", "index": 0}
        assert loc["region"]["startLine"] == f["evidence"][0]["line"]
        msg = res["message"]["text"]
        assert msg.startswith(f["title"]) and f["explanation"][:40] in msg
        if f["fixes"]:
            assert "Fix: " in msg
            assert res["properties"]["fixes"] == f["fixes"]
    assert sarif_run["originalUriBaseIds"]["SRCROOT"]["uri"] == tmp_path.resolve().as_uri() + "/"
    assert sarif_run["invocations"][0]["executionSuccessful"] is True


def test_sarif_rule_help_comes_from_the_rule_docs(tmp_path, rules):
    local = _copy_demo(tmp_path)
    doc = json.loads(run(["--format", "sarif", local.name]).stdout)
    desc = next(d for d in doc["runs"][0]["tool"]["driver"]["rules"] if d["id"] == "SGD401")
    rule = next(r for r in rules if r.code == "SGD401")
    assert desc["fullDescription"]["text"] == " ".join(rule.docs.what.split())
    assert rule.docs.why.strip()[:60] in desc["help"]["text"]
    assert "### How to fix it" in desc["help"]["markdown"]


def test_sarif_docs_base_url_can_be_replaced(tmp_path, monkeypatch):
    monkeypatch.setenv("SGLANG_DOCTOR_DOCS_URL", "https://example.org/mirror")
    doc = json.loads(run(["--format", "sarif", _copy_demo(tmp_path).name]).stdout)
    assert doc["runs"][0]["tool"]["driver"]["rules"][0]["helpUri"].startswith("https://example.org/mirror/docs/rules/")


def test_sarif_unreadable_input_and_stdin_stay_valid(tmp_path, sarif_validator):
    r = run(["--format", "sarif", "missing.log", _copy_demo(tmp_path).name])
    assert r.exit_code == 1
    doc = json.loads(r.stdout)
    assert not list(sarif_validator.iter_errors(doc))
    inv = doc["runs"][0]["invocations"][0]
    assert inv["executionSuccessful"] is False and "missing.log" in inv["toolExecutionNotifications"][0]["message"]["text"]

    text = (DEMO / "qwen3.6-27b-mamba-mfs-0.80.log").read_text()
    r = run(["--format", "sarif"], input=text)
    doc = json.loads(r.stdout)
    assert not list(sarif_validator.iter_errors(doc))
    assert doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "stdin"


def test_sarif_absolute_path_outside_cwd_is_a_file_uri(tmp_path, sarif_validator):
    log = DEMO / "qwen3.6-27b-mamba-mfs-0.80.log"
    doc = json.loads(run(["--format", "sarif", log]).stdout)
    assert not list(sarif_validator.iter_errors(doc))
    art = doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert art["uri"] == log.resolve().as_uri() and "uriBaseId" not in art


def test_sarif_of_a_clean_log_has_no_results(tmp_path, sarif_validator):
    p = tmp_path / "ok.log"
    p.write_text("[2025-01-01 10:00:00] The server is fired up and ready to roll!\n")
    doc = json.loads(run(["--format", "sarif", p.name]).stdout)
    assert not list(sarif_validator.iter_errors(doc))
    assert doc["runs"][0]["results"] == [] and doc["runs"][0]["tool"]["driver"]["rules"] == []


# --- GitHub workflow commands ----------------------------------------------------------

_CMD = re.compile(r"^::(error|warning|notice)(?: ([^:]*))?::(.*)$")


def _unescape(s: str) -> str:
    return s.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":").replace("%2C", ",").replace("%25", "%")


def _annotations(out: str) -> list[tuple[str, dict[str, str], str]]:
    anns = []
    for line in out.splitlines():
        m = _CMD.match(line)
        if not m:
            continue
        props = dict(kv.split("=", 1) for kv in m[2].split(",")) if m[2] else {}
        anns.append((m[1], {k: _unescape(v) for k, v in props.items()}, _unescape(m[3])))
    return anns


def test_escaping_rules():
    assert gh.escape_data("50% a:b,c\r\nd") == "50%25 a:b,c%0D%0Ad"
    assert gh.escape_property("50% a:b,c\r\nd") == "50%25 a%3Ab%2Cc%0D%0Ad"
    line = gh.command("error", "line1\nline2 100%", file="a,b:c.log", line=3, title="SGD1 x: y, z")
    assert line == "::error file=a%2Cb%3Ac.log,line=3,title=SGD1 x%3A y%2C z::line1%0Aline2 100%25"


@given(st.text())
def test_escaping_round_trips_and_leaves_no_separator(s):
    prop = gh.escape_property(s)
    assert not set(prop) & set(":,\r\n") and _unescape(prop) == s
    data = gh.escape_data(s)
    assert "\n" not in data and "\r" not in data and _unescape(data) == s


def test_github_annotations_on_demo(tmp_path):
    local = _copy_demo(tmp_path)
    r = run(["--format", "github", local.name])
    assert r.exit_code == 1
    report = _json([local.name])
    anns = _annotations(r.stdout)
    assert len(anns) == len(report["findings"])
    for (kind, props, msg), f in zip(anns, report["findings"]):
        assert kind == {"error": "error", "warning": "warning", "info": "notice"}[f["severity"]]
        assert props["file"] == local.name and props["line"] == str(f["evidence"][0]["line"])
        assert props["title"] == f"{f['code']} {f['title']}"
        assert msg.startswith(f["explanation"][:40]) and f["rule"] in msg
    # every line is a workflow command or a plain log line; no raw newline inside a command
    assert "--dtype auto → bfloat16" in anns[0][2]


def test_github_escapes_awkward_file_names(tmp_path):
    odd = tmp_path / "rank 0,node:1 100%.log"
    shutil.copy(DEMO / "qwen3.6-27b-mamba-mfs-0.80.log", odd)
    r = run(["--format", "github", odd.name])
    first = r.stdout.splitlines()[0]
    assert first.startswith("::error file=rank 0%2Cnode%3A1 100%25.log,line=16,")
    assert _annotations(r.stdout)[0][1]["file"] == odd.name


def test_github_job_summary_is_appended(tmp_path, monkeypatch):
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    r = run(["--format", "github", _copy_demo(tmp_path).name])
    assert r.exit_code == 1
    text = summary.read_text()
    assert text.startswith("earlier step\n")
    assert "## sglang-doctor:" in text and "SGD401" in text and "```shell" in text


def _many_findings(n: int) -> Report:
    findings = [Finding(rule=f"rule-{i}", code=f"SGD{100 + i}", severity="warning", title=f"title {i}",
                        explanation="x", evidence=[Evidence(input=0, line=i + 1, text=f"line {i}")])
                for i in range(n)]
    rep = Report(inputs=[InputInfo(name="big.log", lines=n)], findings=findings)
    rep.count()
    return rep


def test_github_more_than_ten_annotations_points_to_the_summary(tmp_path, monkeypatch):
    import io

    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    out = io.StringIO()
    gh.write(_many_findings(12), out)
    anns = _annotations(out.getvalue())
    assert sum(1 for k, _, _ in anns if k == "warning") == 12
    assert anns[-1][0] == "notice" and "job summary" in anns[-1][2]
    assert "dropped 2" in summary.read_text() and "SGD111" in summary.read_text()

    monkeypatch.delenv("GITHUB_STEP_SUMMARY")
    out = io.StringIO()
    gh.write(_many_findings(12), out)
    assert "--format markdown" in _annotations(out.getvalue())[-1][2]


def test_github_unreadable_input_is_an_error_annotation(tmp_path):
    r = run(["--format", "github", "nope.log"])
    assert r.exit_code == 2
    kind, props, msg = _annotations(r.stdout)[0]
    assert kind == "error" and "nope.log" in msg and "file" not in props


# --- Markdown --------------------------------------------------------------------------


def test_markdown_on_demo(tmp_path):
    local = _copy_demo(tmp_path)
    r = run(["--format", "markdown", local.name])
    assert r.exit_code == 1
    md = r.stdout
    assert md.startswith("## sglang-doctor: 1 error, 1 warning")
    assert "### error SGD401: Model runs in float16" in md
    assert "**Fix:** `--dtype auto → bfloat16`" in md
    assert "### Corrected command\n\n```shell\ndocker run" in md and "--dtype bfloat16" in md
    details = md[md.index("<details>"):md.index("</details>")]
    assert "<summary>" in details and "| `kv.tokens` | 21482 |" in details
    assert f"{local.name}:34: RuntimeError: Index put requires" in details


def test_markdown_escapes_html_and_fences():
    rep = Report(inputs=[InputInfo(name="x.log")], findings=[Finding(
        rule="r-x", code="SGD999", severity="error", title="a <b> *bold* title",
        explanation="use `x` <script>", evidence=[Evidence(input=0, line=1, text="```\nboom")])])
    rep.count()
    md = render_markdown(rep)
    assert "a &lt;b&gt; \\*bold\\* title" in md and "&lt;script&gt;" in md and "<script>" not in md
    assert "````text\n```\nboom\n````" in md


def test_markdown_redacts_even_an_unredacted_report():
    rep = Report(inputs=[InputInfo(name="x.log")], context={"command": f"sglang serve --api-key {SK}",
                                                            "note": f"token {HF}"},
                 corrected_command=f"sglang serve --api-key {SK} --tp-size 2",
                 findings=[Finding(rule="r-x", code="SGD999", severity="error", title="t",
                                   explanation=f"saw {HF}", evidence=[Evidence(input=0, line=1, text=f"Bearer {SK}")],
                                   fixes=[FixOut(kind="note", text=f"rotate {SK}")])])
    rep.count()
    md = render_markdown(rep)
    assert SK not in md and HF not in md and SK[3:] not in md and HF[3:] not in md


# --- JUnit -----------------------------------------------------------------------------


def test_junit_one_suite_per_input(tmp_path):
    a = _copy_demo(tmp_path)
    b = _copy_demo(tmp_path, "qwen3.6-27b-mamba-mfs-0.80.log")
    clean = tmp_path / "ok.log"
    clean.write_text("[2025-01-01 10:00:00] The server is fired up and ready to roll!\n")
    r = run(["--format", "junit", a.name, b.name, clean.name])
    assert r.exit_code == 1
    root = ET.fromstring(r.stdout)
    report = _json([a.name, b.name, clean.name])
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == [a.name, b.name, clean.name]
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    assert root.get("failures") == str(len(errors)) and root.get("tests") == str(len(report["findings"]) + 1)
    by_input = {}
    for f in report["findings"]:
        by_input.setdefault(f["evidence"][0]["input"], []).append(f)
    for i, suite in enumerate(suites):
        cases = suite.findall("testcase")
        if i == 2:
            assert [c.get("name") for c in cases] == ["no known problem"] and not cases[0].findall("*")
            continue
        assert [c.get("name") for c in cases] == [f"{f['code']} {f['rule']}" for f in by_input[i]]
        for c, f in zip(cases, by_input[i]):
            failure = c.find("failure")
            assert (failure is not None) == (f["severity"] == "error")
            if failure is not None:
                assert failure.get("message") == f["title"] and f["explanation"][:30] in failure.text
            else:
                assert f["title"] in c.find("system-out").text
        assert suite.get("failures") == str(sum(1 for f in by_input[i] if f["severity"] == "error"))


def test_junit_follows_fail_on(tmp_path):
    local = _copy_demo(tmp_path)
    root = ET.fromstring(run(["--format", "junit", "--fail-on", "info", local.name]).stdout)
    assert root.get("failures") == root.get("tests")
    root = ET.fromstring(run(["--format", "junit", "--fail-on", "never", local.name]).stdout)
    assert root.get("failures") == "0"


def test_junit_stays_well_formed_with_odd_text(tmp_path):
    rep = Report(inputs=[InputInfo(name="a&b<c>.log")], findings=[Finding(
        rule="r", code="SGD999", severity="error", title='quote " & <tag>',
        explanation="bell \x07 nul \x00 end ]]>", evidence=[Evidence(input=0, line=1, text="x\x1by")])])
    rep.count()
    import io

    from sglang_doctor.report.junit import write

    out = io.StringIO()
    write(rep, out)
    root = ET.fromstring(out.getvalue())
    assert root.find("testsuite").get("name") == "a&b<c>.log"
    assert "]]>" in root.find("testsuite/testcase/failure").text


def test_junit_unreadable_input_is_an_error(tmp_path):
    r = run(["--format", "junit", "nope.log"])
    assert r.exit_code == 2
    root = ET.fromstring(r.stdout)
    assert root.get("errors") == "1" and root.find("testsuite/testcase/error") is not None


# --- redaction and exit codes in every format ----------------------------------------------


def _secret_log(tmp_path: Path) -> Path:
    lines = (DEMO / "qwen3.6-27b-awq-dtype-crash.log").read_text().splitlines()
    lines[0] = lines[0].replace("docker run", f"docker run -e HF_TOKEN={HF}").replace("--port 30000", f"--port 30000 --api-key {SK}")
    lines[1] = lines[1].replace("api_key=None", f"api_key='{SK}'")
    lines = [ln + f" token={HF} --api-key {SK}" if ln.startswith("RuntimeError: Index put") else ln for ln in lines]
    p = tmp_path / "secret.log"
    p.write_text("\n".join(lines) + "\n")
    return p


@pytest.mark.parametrize("fmt", FORMATS)
def test_no_secret_leaks_in_any_format(tmp_path, monkeypatch, fmt):
    log = _secret_log(tmp_path)
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    r = run(["--format", fmt, "--why", "--write-baseline", "b.json", log.name])
    r2 = run(["--format", fmt, "--no-baseline", log.name])
    assert r2.exit_code == 1
    assert "SGD401" in r2.stdout
    for text in (r.stdout, r.stderr, r2.stdout, r2.stderr, summary.read_text() if summary.exists() else "",
                 (tmp_path / "b.json").read_text()):
        assert SK not in text and HF not in text
        assert "9f8e7d6c5b4a3210" not in text and "AbCdEfGhIjKl" not in text


def _clean_log(tmp_path: Path) -> Path:
    p = tmp_path / "ok.log"
    p.write_text("[2025-01-01 10:00:00] The server is fired up and ready to roll!\n")
    return p


@pytest.mark.parametrize("fmt", FORMATS)
def test_exit_codes_are_the_same_in_every_format(tmp_path, fmt):
    crash = _copy_demo(tmp_path)
    clean = _clean_log(tmp_path)
    assert run(["--format", fmt, crash.name]).exit_code == 1
    assert run(["--format", fmt, "--fail-on", "never", crash.name]).exit_code == 0
    assert run(["--format", fmt, clean.name]).exit_code == 0
    assert run(["--format", fmt, "missing.log"]).exit_code == 2
    assert run(["--format", fmt, clean.name, "missing.log"]).exit_code == 2
    assert run(["--format", fmt, crash.name, "missing.log"]).exit_code == 1
    assert run(["demo", "--format", fmt]).exit_code == 0  # a demo is no failure of a first command...
    assert run(["demo", "--format", fmt, "--fail-on", "error"]).exit_code == 1  # ...unless asked
    assert run(["explain", "--format", fmt, "RuntimeError: Index put requires the source and destination dtypes "
                "match, got BFloat16 for the destination and Half for the source."]).exit_code == 1


@pytest.mark.parametrize("fmt", ["sarif", "json", "junit"])
def test_machine_formats_parse_for_every_demo(tmp_path, fmt):
    for log in DEMO_LOGS:
        out = run(["--format", fmt, _copy_demo(tmp_path, log.name).name]).stdout
        if fmt == "junit":
            ET.fromstring(out)
        else:
            json.loads(out)


def test_sarif_from_report_object_without_rules(tmp_path, sarif_validator):
    """A Report alone (no rule objects) still gives valid SARIF with descriptors from findings."""
    rep = _many_findings(2)
    doc = sarif_log(rep, rules=None, cwd=tmp_path)
    assert not list(sarif_validator.iter_errors(doc))
    assert doc["runs"][0]["tool"]["driver"]["rules"][1]["fullDescription"]["text"] == "title 1"
