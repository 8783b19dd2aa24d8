"""Facts about SGLang launch flags, checked against data/flags.json.

Every fact below was checked in the release wheels' own
``sglang/srt/server_args.py`` / ``srt/arg_groups`` source, not from memory.
"""

from __future__ import annotations

from importlib import resources

import pytest

from sglang_doctor.registry import flags as F

ALL_04_05 = [r for r in F.releases() if r.startswith(("0.4.", "0.5."))]


# -- registry shape ----------------------------------------------------------


def test_releases_cover_04_to_newest_in_order() -> None:
    rels = F.releases()
    assert rels[0] == "0.4.0"
    assert rels == sorted(rels, key=F.version_key)
    for r in ("0.4.0.post2", "0.4.1.post7", "0.4.6.post5", "0.5.0rc2", "0.5.10", "0.5.14", "0.5.23"):
        assert r in rels
    assert all(len(F.flags_for(r)) > 50 for r in rels)


def test_data_file_is_compact() -> None:
    blob = resources.files("sglang_doctor").joinpath("data/flags.json").read_bytes()
    assert len(blob) < 1_500_000


def test_version_key_order() -> None:
    ordered = ["0.4.0", "0.4.0.post1", "0.4.6", "0.4.6.post1", "0.4.6.post5", "0.4.10", "0.5.0rc0", "0.5.0rc1", "0.5.0", "0.5.0.post1", "0.5.1", "0.5.10", "0.5.10.post1"]
    assert sorted(reversed(ordered), key=F.version_key) == ordered
    assert F.version_key("0.5") == F.version_key("0.5.0")
    assert F.version_key("0.5.10.dev1") < F.version_key("0.5.10rc0") < F.version_key("0.5.10")


def test_flag_counts_grow() -> None:
    assert len(F.flags_for("0.4.0")) == 82
    assert len(F.flags_for("0.5.14")) == 420
    assert len(F.flags_for("0.4.0")) < len(F.flags_for("0.5.5")) < len(F.flags_for("0.5.23"))


def test_flagspec_is_frozen() -> None:
    spec = F.flags_for("0.5.14")["--tp-size"]
    with pytest.raises(AttributeError):
        spec.name = "--x"  # type: ignore[misc]
    assert spec.help.startswith("The tensor parallelism size")  # from flag-helps.json, on demand


# -- facts from the source ---------------------------------------------------


def test_cuda_graph_max_bs_decode_is_new_in_0_5_14() -> None:
    assert F.flag_exists("--cuda-graph-max-bs-decode", "0.5.14")
    assert not F.flag_exists("--cuda-graph-max-bs-decode", "0.5.10")
    assert F.releases_with("--cuda-graph-max-bs-decode")[0] == "0.5.14"


def test_cuda_graph_max_bs_history() -> None:
    for rel in [r for r in ALL_04_05 if r.startswith("0.4.")] + ["0.5.10"]:
        spec = F.resolve("--cuda-graph-max-bs", rel)
        assert spec is not None and not spec.deprecated, rel
        assert spec.type == "int"
    spec = F.resolve("--cuda-graph-max-bs", "0.5.14")
    assert spec is not None
    assert spec.deprecated
    assert spec.replacement == "--cuda-graph-max-bs-decode"
    # Per the source the deprecated alias was dropped again in 0.5.20.
    assert F.releases_with("--cuda-graph-max-bs")[-1] == "0.5.19"
    assert not F.flag_exists("--cuda-graph-max-bs", "0.5.20", allow_abbrev=False)


@pytest.mark.parametrize(
    "flag",
    [
        "--mem-fraction-static",
        "--tp-size",
        "--dtype",
        "--kv-cache-dtype",
        "--disable-cuda-graph",
        "--attention-backend",
        "--trust-remote-code",
        "--context-length",
    ],
)
def test_core_flags_exist_in_every_release(flag: str) -> None:
    assert F.releases_with(flag) == ALL_04_05


def test_core_flag_specs() -> None:
    assert F.resolve("--mem-fraction-static", "0.4.0").type == "float"
    assert F.resolve("--trust-remote-code", "0.4.6").type == "bool"
    assert F.resolve("--trust-remote-code", "0.4.6").default is False
    assert F.resolve("--tp-size", "0.5.5").default == 1
    kv = F.resolve("--kv-cache-dtype", "0.4.0")
    assert kv.default == "auto" and kv.choices == ("auto", "fp8_e5m2")
    assert "triton" in F.resolve("--attention-backend", "0.4.0").choices


def test_disable_cuda_graph_deprecated_from_0_5_14() -> None:
    assert not F.resolve("--disable-cuda-graph", "0.5.13").deprecated
    spec = F.resolve("--disable-cuda-graph", "0.5.14")
    assert spec.deprecated and spec.replacement == "--cuda-graph-backend-decode"
    assert spec.hint == "--cuda-graph-backend-{decode,prefill}=disabled"


def test_replacement_with_value_hint() -> None:
    spec = F.resolve("--disable-flashinfer", "0.4.0")
    assert spec.deprecated
    assert spec.replacement == "--attention-backend"
    assert spec.hint == "--attention-backend triton"


def test_mamba_flags_in_0_5_14() -> None:
    assert F.flag_exists("--mamba-full-memory-ratio", "0.5.14")
    assert F.flag_exists("--max-mamba-cache-size", "0.5.14")
    assert F.resolve("--mamba-full-memory-ratio", "0.5.14").type == "float"
    assert not F.flag_exists("--max-mamba-cache-size", "0.4.6", allow_abbrev=False)


# -- aliases and abbreviations -------------------------------------------------


def test_tensor_parallel_size_is_alias_of_tp_size() -> None:
    for rel in ("0.4.0", "0.5.10", "0.5.14", "0.5.23"):
        table = F.flags_for(rel)
        assert "--tensor-parallel-size" in table.option_strings()
        assert "--tensor-parallel-size" in table
        assert table["--tensor-parallel-size"].name == "--tp-size"
        assert "--tensor-parallel-size" in table["--tp-size"].aliases
        assert "--tensor-parallel-size" not in list(table)  # keys are long names only
        assert F.resolve("--tensor-parallel-size", rel).name == "--tp-size"


def test_tp_abbreviation_resolves() -> None:
    for rel in F.releases():
        spec = F.resolve("--tp", rel)
        assert spec is not None and spec.name == "--tp-size", rel
    assert F.resolve("--tp", None).name == "--tp-size"
    assert F.resolve("--tp", "0.5.14", allow_abbrev=False) is None


def test_ambiguous_prefix_is_rejected() -> None:
    assert F.resolve("--disable", "0.5.14") is None
    assert not F.flag_exists("--disable", "0.5.14")


def test_value_suffix_is_ignored() -> None:
    assert F.resolve("--tp-size=4", "0.5.14").name == "--tp-size"


def test_release_none_is_newest_and_unknown_release() -> None:
    assert F.flags_for(None) is F.flags_for(F.releases()[-1])
    # an unrecorded later version maps to the newest recorded one before it
    assert F.flags_for("0.5.14.post9") is F.flags_for("0.5.14")
    with pytest.raises(KeyError):
        F.flags_for("0.3.0")


def test_serve_flags() -> None:
    assert F.serve_flags("0.4.6") is None
    assert F.serve_flags("0.5.5") == []
    assert F.serve_flags("0.5.14") == ["--model-type"]


# -- nearest -------------------------------------------------------------------


def test_nearest() -> None:
    assert F.nearest("--mem-fraction-statc") == "--mem-fraction-static"
    assert F.nearest("--mem-fraction-statc", "0.4.0") == "--mem-fraction-static"
    assert F.nearest("--tp_size", "0.5.14") == "--tp-size"
    assert F.nearest("--tensor-parallel-size", "0.5.14") == "--tp-size"
    assert F.nearest("--cuda-graph-max-bs-decod", "0.5.14") == "--cuda-graph-max-bs-decode"
    assert F.nearest("--completely-unrelated-thing", "0.5.14") is None


# -- ranges ----------------------------------------------------------------------


def test_range_inclusive() -> None:
    got = F.releases_in_range("0.5.14-0.5.16")
    assert got == ["0.5.14", "0.5.15", "0.5.15.post1", "0.5.16"]
    assert F.releases_in_range("0.5.14-0.5.23")[-1] == "0.5.23"


def test_range_open_ends_and_operators() -> None:
    rels = F.releases()
    assert F.releases_in_range("*") == rels
    assert F.releases_in_range("") == rels
    assert F.releases_in_range("0.4.6-")[0] == "0.4.6"
    assert F.releases_in_range("0.4.6-")[-1] == rels[-1]
    assert F.releases_in_range("-0.4.0.post2") == ["0.4.0", "0.4.0.post1", "0.4.0.post2"]
    assert F.releases_in_range(">=0.5.10")[0] == "0.5.10"
    assert "0.5.9" not in F.releases_in_range(">=0.5.10")
    assert F.releases_in_range(">0.5.22") == ["0.5.23"]
    assert F.releases_in_range("<0.4.1") == ["0.4.0", "0.4.0.post1", "0.4.0.post2"]
    assert F.releases_in_range("0.5.14") == ["0.5.14"]
    assert F.releases_in_range("==0.5.14") == ["0.5.14"]
    assert F.releases_in_range(">=0.5.10,<0.5.12") == ["0.5.10", "0.5.10.post1", "0.5.11"]
    assert F.releases_in_range("0.4.10.*") == ["0.4.10", "0.4.10.post1", "0.4.10.post2"]
    assert F.releases_in_range("0.5.0rc0-0.5.1") == ["0.5.0rc0", "0.5.0rc1", "0.5.0rc2", "0.5.1"]
    # bounds need not be recorded releases
    assert F.releases_in_range("0.5.0-0.5.1") == ["0.5.1"]


def test_range_rejects_garbage() -> None:
    with pytest.raises(ValueError):
        F.releases_in_range(">=banana")


def test_release_hits_agree_with_the_flag_tables() -> None:
    """The one-pass index counts what a release's own flag table accepts, aliases included."""
    opts = {"--tp-size", "--tensor-parallel-size", "--cuda-graph-max-bs-decode", "--enable-ep-moe", "--no-such"}
    for rel, hits in F.release_hits(opts)[::9]:
        table = F.flags_for(rel)
        assert hits == sum(1 for o in opts if o in table), rel


def test_infer_version_from_a_release_s_own_fields() -> None:
    from sglang_doctor.launch.version_infer import infer_version

    fields = {n[2:].replace("-", "_") for n in F.flags_for("0.5.14")}
    rng, how = infer_version(fields)  # type: ignore[misc]
    first, last = rng.split("-")[0], rng.split("-")[-1]
    assert F.version_key(first) <= F.version_key("0.5.14") <= F.version_key(last)
    assert "server_args fields" in how


def test_field_flag_and_takes_value():
    from sglang_doctor.registry.flags import field_flag, takes_value

    assert field_flag("speculative_num_draft_tokens") == "--speculative-num-draft-tokens"
    assert field_flag("--page-size") == "--page-size"
    assert field_flag("hidden_size") is None and field_flag("") is None and field_flag("a b") is None
    assert takes_value("--node-rank") is True
    assert takes_value("--disable-cuda-graph") is False
    assert takes_value("--no-such-flag") is None
