"""SGLang's message catalog (data/messages.jsonl.gz, tools/extract_messages.py, registry/messages.py)."""

from __future__ import annotations

import gzip
import importlib
import importlib.util
import json
import os
import time
import zipfile
from pathlib import Path

import pytest
import regex

from helpers_tools import load_tool
from sglang_doctor.registry import messages

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "sglang_doctor" / "data" / messages.DATA_FILE




TOOL = load_tool("extract_messages")


# ---------------------------------------------------------------- the extractor, on made-up sources

CONSTS = b'''
HINT = (
    "Possible solutions:\\n"
    "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\\n"
    "2. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)\\n"
)
'''
RUNNER = b'''
import logging
from sglang.srt.hints import HINT
logger = logging.getLogger(__name__)

class Runner:
    def capture(self, e):
        raise Exception(f"Capture cuda graph failed: {e}\\n{HINT}")

    def check(self, server_args, n):
        assert n > 0, f"mem_fraction_static={server_args.mem_fraction_static} is too small for {n} layers"
        msg = "Invalid tensor parallel size {} for model {}".format(server_args.tp_size, self.model)
        raise ValueError(msg)

    def load(self, t):
        logger.info("Load weight end. type=%s, avail mem=%.2f GB", type(t).__name__, self.mem)
        logger.warning("Tiny")
        logger.debug("Debug messages are not shown at the default level, skipped")
        print_warning_once("Using a slower fallback kernel for " + t + " on this GPU")

    def parse(self, option_string):
        print_deprecated_warning(f"The command line argument '{option_string}' is deprecated and will be removed.")
        raise_error_or_warn(self, self.strict, "leaks", f"token pool memory leak detected! {self.n}")
        _warn_once("fp4", "Falling back to the %s GEMM backend for this layer", self.backend)
        not_a_helper(f"A string passed to a function that logs nothing: {option_string}")
'''


def _wheel(tmp_path: Path, files: dict[str, bytes]) -> Path:
    path = tmp_path / "sglang-0.0.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return path


def _sites(tmp_path: Path) -> dict[str, object]:
    wheel = _wheel(tmp_path, {"sglang/srt/hints.py": CONSTS, "sglang/srt/runner.py": RUNNER,
                              "sglang/test/test_runner.py": b"raise ValueError('a test message that is long')",
                              "sglang/bench_serving.py": b"raise ValueError('a benchmark message that is long')"})
    sites, nfiles, unparsable = TOOL.read_release(str(wheel))
    assert nfiles == 2 and not unparsable  # tests and benchmarks are not read
    return {TOOL.display(s.parts): s for s in sites}


def test_fstrings_constants_locals_and_formats_become_templates(tmp_path: Path) -> None:
    sites = _sites(tmp_path)
    capture = next(s for t, s in sites.items() if t.startswith("Capture cuda graph failed: {e}\nPossible solutions:"))
    assert (capture.kind, capture.cls, capture.file, capture.function) == ("raise", "Exception", "srt/runner.py",
                                                                          "Runner.capture")
    assert "{mem_fraction_static} is too small for {n} layers" in \
        next(t for t, s in sites.items() if s.kind == "assert")
    assert "Invalid tensor parallel size {tp_size} for model {model}" in sites  # msg = "...".format(); raise X(msg)
    assert "Load weight end. type={name}, avail mem={mem} GB" in sites  # logging's lazy %-args
    assert "Using a slower fallback kernel for {t} on this GPU" in sites
    assert not any("Debug messages" in t for t in sites)


def test_logging_helpers_record_their_message_with_the_helpers_level(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path, {"sglang/srt/runner.py": RUNNER})
    found = [(TOOL.display(s.parts), s.kind, s.cls, s.function) for s in TOOL.read_release(str(wheel))[0]]
    assert ("The command line argument '{option_string}' is deprecated and will be removed.", "log", "warning",
            "Runner.parse") in found
    leak = "token pool memory leak detected! {n}"  # raise_error_or_warn: a ValueError when strict, else a warning
    assert {(k, c) for t, k, c, _ in found if t == leak} == {("raise", "ValueError"), ("log", "warning")}
    assert ("Falling back to the {backend} GEMM backend for this layer", "log", "warning", "Runner.parse") in found
    assert not any(t.startswith("A string passed to a function") for t, *_ in found)


def test_advice_flags_and_the_head_literal() -> None:
    parts = TOOL.normalize(["Capture cuda graph failed: ", TOOL.Field("e"), "\n" + "Possible solutions:\n"
                            "1. set --mem-fraction-static to a smaller value\n2. disable CUDA graph by --disable-cuda-graph\n"])
    text = TOOL.display(parts)
    assert TOOL.advice(text) == ["set --mem-fraction-static to a smaller value", "disable CUDA graph by --disable-cuda-graph"]
    assert TOOL.head_literal(parts) == (0, "Capture cuda graph failed:")
    # a first line that is all field: the head is the next line with enough literal text
    assert TOOL.head_literal(TOOL.normalize([TOOL.Field("e"), "\nshort\nthe real message line is here"])) == \
        (2, "the real message line is here")
    assert TOOL.head_literal(TOOL.normalize(["Not found: ", TOOL.Field("x")])) is None  # too short
    assert TOOL.advice("Try: 1. lower --x 2. raise --y") == ["lower --x", "raise --y"]


def test_edge_words_glued_to_a_field_are_not_anchors() -> None:
    parts = TOOL.normalize([TOOL.Field("n"), "GB of memory needed, got ", TOOL.Field("m")])
    lit = TOOL.head_literal(parts)[1]
    words = TOOL.anchor_word(lit, TOOL.literal_edges(parts, lit))
    assert "gb" not in words and "memory" in words and "got" in words


# ---------------------------------------------------------------- the committed data


def _header() -> dict:
    with gzip.open(DATA, "rb") as f:
        return json.loads(f.readline())


def test_header_records_releases_wheels_and_the_length_rule() -> None:
    head = _header()
    assert head["generator"] == "tools/extract_messages.py"
    assert head["releases"][0] == "0.4.0" and len(head["releases"]) >= 12
    assert head["releases"] == TOOL.DEFAULT_RELEASES
    for rel, w in zip(head["releases"], head["wheels"]):
        assert w["wheel"].startswith(f"sglang-{rel}-") and len(w["sha256"]) == 64
    assert head["min_literal"] == TOOL.MIN_LITERAL and "left out" in head["notes"]


def test_catalog_is_compact_and_loads_fast() -> None:
    assert DATA.stat().st_size < 2_000_000
    t0 = time.perf_counter()
    cat = messages.load(str(DATA))
    cat.lookup("Exception: Capture cuda graph failed: CUDA out of memory")
    assert time.perf_counter() - t0 < 3.0  # ~0.1 s on a developer machine; generous for loaded CI
    assert 15_000 <= len(cat) <= 40_000


def test_every_template_compiles_and_recognises_its_own_message() -> None:
    cat = messages.load()
    bad = []
    for n in range(0, len(cat), 7):  # a deterministic seventh: the full set takes ~10 s
        e = cat.entry(n)
        rx = regex.compile(e.pattern)
        filled = "".join(p if i % 2 == 0 else "1" for i, p in enumerate(e.parts))
        if e.literal not in filled or not rx.search(filled) or n not in cat.candidate_ids(filled):
            bad.append(e.template)
    assert not bad, bad[:5]


def test_capture_cuda_graph_failed_gives_its_site_advice_and_flags() -> None:
    line = ("Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 2.00 GiB\n"
            "Possible solutions:\n1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n")
    hits = messages.lookup(line, release="0.5.23")
    assert hits and all(e.may_exist_in("0.5.23") for e in hits)
    e = next(h for h in hits if h.file == "srt/model_executor/runner/decode_cuda_graph_runner.py")
    assert e.kind == "raise" and e.cls == "Exception" and "--mem-fraction-static" in e.flags
    assert e.advice[0].startswith("set --mem-fraction-static to a smaller value")
    assert e.origin("0.5.23") == {"package": "sglang", "file": e.file, "line": e.line_in("0.5.23"),
                                  "function": e.function, "releases": e.release_range}
    old = messages.lookup(line, release="0.4.10.post2")
    files = {h.file for h in old}
    assert "srt/model_executor/cuda_graph_runner.py" in files  # (and the EAGLE draft runners)
    assert "srt/model_executor/runner/decode_cuda_graph_runner.py" not in files
    m = e.match(line)
    assert m and m.group("e").startswith("CUDA out of memory")


@pytest.mark.parametrize("line, template_start, field, value", [
    ("[2025-05-01 10:00:00 TP0] Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem=60.12 GB, "
     "mem usage=15.23 GB.", "Load weight end. type=", "dtype", "torch.bfloat16"),
    ("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.", "Not enough memory.", None, None),
    ("[2025-05-01 10:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):",
     "Scheduler hit an exception:", None, None),
])
def test_real_log_lines(line: str, template_start: str, field: str | None, value: str | None) -> None:
    hits = messages.lookup(line)
    assert hits and hits[0].template.startswith(template_start), [h.template for h in hits[:3]]
    if field:
        assert hits[0].match(line).group(field) == value


def test_no_match_and_release_ranges() -> None:
    assert messages.lookup("a line that no SGLang release ever printed, surely") == []
    cat = messages.load()
    e = cat.entry(0)
    assert e.release_range and all(r in cat.releases for part in e.release_range.split(",") for r in part.split("-")
                                   if r)
    assert e.may_exist_in(e.releases[0])


def test_nothing_is_read_at_import() -> None:
    mod = importlib.reload(messages)
    assert mod._CATALOG is None


@pytest.mark.catalog_build
def test_rebuild_from_local_wheels_gives_the_committed_file(tmp_path: Path) -> None:
    if not os.environ.get("CATALOG_BUILD"):
        pytest.skip("reads 14 releases (~15 min): set CATALOG_BUILD=1")
    wheelcache = load_tool("wheelcache")
    if any(wheelcache.cached("sglang", r) is None for r in TOOL.DEFAULT_RELEASES):
        pytest.skip("the sglang wheels are not in wheels/")
    out = tmp_path / "m.jsonl.gz"
    TOOL.main(["--out", str(out)])
    assert gzip.decompress(out.read_bytes()) == gzip.decompress(DATA.read_bytes())


def test_templates_matching_a_rule_regex() -> None:
    cat = messages.load()
    hits = cat.templates_matching(r"Capture (?i:cuda) graph failed: (?P<cause>[^\n]*)")
    assert hits and all("capture cuda graph failed" in e.template.lower() for e in hits)
    assert cat.templates_matching(r"Capture cuda graph failed", releases=["0.4.0"]) == \
        [e for e in hits if "0.4.0" in e.releases]
    assert cat.templates_matching(r"Captrue cuda graph failed") == []  # a typo matches nothing
