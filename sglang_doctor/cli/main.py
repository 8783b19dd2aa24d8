"""Command line: `sglang-doctor [FILES]`, `sglang-doctor explain`, `sglang-doctor rules …`.

Exit status for every format: 0 no finding at or above --fail-on, 1 findings at or above
it, 2 usage, input or rule-file error (always a one-line message, never a traceback).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from sglang_doctor import __version__
from sglang_doctor.cli.check import diagnose, die, echo, guarded, load_rules, run_check, run_explain, settings
from sglang_doctor.model import FAIL_ON, FORMATS
from sglang_doctor.policy.suppress import DEFAULT_BASELINE


class _DefaultToCheck(click.Group):
    """`sglang-doctor x.log` means `sglang-doctor check x.log`."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # While completing (resilient parsing) an empty command line offers the subcommands.
        if (not args and not ctx.resilient_parsing) or (
                args and args[0] not in self.list_commands(ctx) and args[0] not in ("--help", "-h", "--version")):
            args = ["check", *args]
        return super().parse_args(ctx, args)

    # Commands whose module (and click options) load only when they run: `check`'s cold start stays as is.
    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name == "preflight":
            from sglang_doctor.cli.preflight import preflight

            return preflight
        return super().get_command(ctx, name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*self.commands, "preflight"])

    def invoke(self, ctx: click.Context) -> Any:
        return guarded(lambda: super(_DefaultToCheck, self).invoke(ctx),
                       passthrough=(click.ClickException, click.exceptions.Exit, click.Abort))


def _given(opts: dict[str, Any]) -> set[str]:
    """Which of the current command's `opts` its command line set (not left at their defaults)."""
    from click.core import ParameterSource

    ctx = click.get_current_context()
    return {name for name in opts if ctx.get_parameter_source(name) is not ParameterSource.DEFAULT}


_common = [
    click.option("--format", "fmt", type=click.Choice(list(FORMATS)), default="text", show_default=True,
                 help="Output format."),
    click.option("--fail-on", type=click.Choice(list(FAIL_ON)), default="error",
                 show_default=True, help="Exit 1 when a finding has at least this severity."),
    click.option("--rules", "rule_dirs", multiple=True, type=click.Path(), metavar="DIR",
                 help="Also load rules from DIR (repeatable)."),
    click.option("--cmd", "command", default=None, metavar="COMMAND",
                 help="The launch command (docker run … / python -m sglang.launch_server …) to correct."),
    click.option("--cmd-file", default=None, type=click.Path(), metavar="FILE",
                 help="Read the launch command from a shell script or a compose file."),
    click.option("--model-dir", default=None, type=click.Path(), metavar="DIR",
                 help="The model's directory (its config.json): fix values such as a --tp-size that splits its heads. "
                      "Default: the launch's model path on disk or in the Hugging Face cache."),
    click.option("--diff", is_flag=True, help="Also show the corrected command as a unified diff of the given one."),
    click.option("--fix", "fix", is_flag=True,
                 help="Rewrite the --cmd-file in place to run the corrected command (only one that carries the root "
                      "cause's fix), the original kept as FILE.bak; prints the change as a diff, secrets masked."),
    click.option("--redact-hosts", is_flag=True, help="Also mask IP addresses and host names."),
    click.option("-q", "--quiet", is_flag=True, help="Only errors and warnings; no startup summary."),
    click.option("--color/--no-color", default=None, help="Force colour on or off (default: auto, NO_COLOR)."),
    click.option("--config", "config", default=None, type=click.Path(dir_okay=False), metavar="FILE",
                 help="Read settings from FILE (default: the nearest .sglang-doctor.yaml or pyproject.toml "
                      "[tool.sglang-doctor] from the current directory up)."),
    click.option("--baseline", default=None, type=click.Path(dir_okay=False), metavar="FILE",
                 help=f"Hide the findings listed in FILE (default: {DEFAULT_BASELINE} in the current "
                      "directory, when it exists)."),
    click.option("--no-baseline", is_flag=True, help=f"Do not read {DEFAULT_BASELINE} from the current directory."),
    click.option("--write-baseline", default=None, type=click.Path(dir_okay=False), metavar="FILE",
                 help="Write the current findings to FILE as a baseline (keeps reasons and expiry dates "
                      "already there), then report with it applied."),
    click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, metavar="N",
                 help="Analyse up to N files at once in worker processes (default: one per idle core when "
                      "several files add up to 512 MB or more; 1: one at a time)."),
    click.option("--why", is_flag=True,
                 help="Explain every rule on every input: prefilter, matches, conditions (stderr, or "
                      "stdout after a text report)."),
]


def common_options(fn: Any) -> Any:
    for opt in reversed(_common):
        fn = opt(fn)
    return fn


@click.group(cls=_DefaultToCheck, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="sglang-doctor")
def main() -> None:
    """Diagnose a crashed SGLang launch from its log.

    \b
      docker logs sgl 2>&1 | sglang-doctor
      sglang-doctor launch.log other-rank.log.gz
      sglang-doctor explain "RuntimeError: Index put requires …"
    """


@main.command()
@click.argument("files", nargs=-1, type=click.Path(readable=False))  # the reader names unreadable files; the rest still run
@click.option("-f", "--follow", is_flag=True,
              help="Follow a growing file or a live pipe; print findings as they happen (JSON: one line each).")
@click.option("--statistics", is_flag=True,
              help="Instead of the findings: how many each rule gave and what each input holds (text or json).")
@common_options
def check(files: tuple[str, ...], follow: bool = False, statistics: bool = False, **opts: Any) -> None:
    """Read logs (files, directories of *.log, or stdin) and report what went wrong."""
    run_check(files, opts, _given(opts), follow=follow, statistics=statistics)


def demo_logs() -> list[Path]:
    return sorted((Path(__file__).parent.parent / "fixtures" / "demo").glob("*.log"))


@main.command()
@click.argument("name", required=False)
@common_options
def demo(name: str | None, **opts: Any) -> None:
    """Diagnose a bundled example log (the Qwen3.6 dtype crash unless NAME picks another).

    Exits 0 whatever it finds, unless --fail-on is given."""
    logs = demo_logs()
    pick = [p for p in logs if name and name in p.name] if name else [p for p in logs if "dtype" in p.name]
    if not pick:
        die(f"no demo log matches {name!r}; bundled: {', '.join(p.name for p in logs)}")
    st = settings(opts, _given(opts))
    from click.core import ParameterSource

    if click.get_current_context().get_parameter_source("fail_on") is not ParameterSource.COMMANDLINE:
        st.fail_on = "never"  # a demo of a crash is no failure of the user's first command; --fail-on asks for one
    if st.fmt == "text":
        echo(f"Diagnosing the bundled example {pick[0].name}:\n")
    diagnose(st, [str(pick[0])], display_name=pick[0].name)


@main.command()
@click.argument("text", nargs=-1)
@common_options
def explain(text: tuple[str, ...], **opts: Any) -> None:
    """Explain a pasted traceback (stdin) or an error message given as arguments.

    \b
      sglang-doctor explain "CUDA out of memory."
      docker logs sgl 2>&1 | tail -60 | sglang-doctor explain
    """
    run_explain(text, opts, _given(opts))


# --- rules -------------------------------------------------------------------------


@main.group()
def rules() -> None:
    """List, show and test the rules."""


@rules.command("list")
@click.option("--rules", "rule_dirs", multiple=True, type=click.Path(), metavar="DIR")
def rules_list(rule_dirs: tuple[str, ...]) -> None:
    """Every rule: code, severity, id and title."""
    for r in sorted(load_rules(rule_dirs), key=lambda r: r.code):
        click.echo(f"{r.code}  {r.severity:<7}  {r.id:<44}  {r.title}")


@rules.command("show")
@click.argument("rule_id")
@click.option("--rules", "rule_dirs", multiple=True, type=click.Path(), metavar="DIR")
@click.option("--yaml", "show_yaml", is_flag=True, help="Print the rule's YAML file (a complete rule to start from).")
@click.option("--fixtures", "show_fixtures", is_flag=True, help="Print the rule's fixture logs (fires-*, quiet-*).")
def rules_show(rule_id: str, rule_dirs: tuple[str, ...], show_yaml: bool, show_fixtures: bool) -> None:
    """A rule's docs page: what, why, fixes, messages (by id or code); --yaml, --fixtures: its files."""
    from sglang_doctor.ruledev.docs import rule_files, rule_markdown

    for r in load_rules(rule_dirs):
        if rule_id in (r.id, r.code):
            click.echo(rule_files(r, show_yaml, show_fixtures) if show_yaml or show_fixtures else rule_markdown(r))
            return
    die(f"no rule with id or code {rule_id!r} (see `sglang-doctor rules list`)")


@rules.command("test")
@click.option("--rules", "rule_dirs", multiple=True, type=click.Path(), metavar="DIR")
@click.option("--only-user", is_flag=True, help="Test only the rules from --rules directories.")
@click.option("--update", is_flag=True, help="Rewrite each fires fixture's snapshot (<fixture>.snap.yaml) "
                                             "from what the rule says now; review the diff.")
def rules_test(rule_dirs: tuple[str, ...], only_user: bool, update: bool) -> None:
    """Run every rule on its fixtures: fires-*.log must fire it, quiet-*.log must not, and each
    fires fixture's finding must equal its snapshot."""
    from sglang_doctor.ruledev.fixture_test import run_fixture_tests

    all_rules = load_rules(rule_dirs)
    res = run_fixture_tests(all_rules, rule_dirs if only_user else None, update=update)
    for f in res.failures:
        click.echo(f"FAIL {f}")
    for p in res.updated:
        click.echo(f"{'updated' if p.is_file() else 'removed'} {p}")
    click.echo(f"{res.checked - len(res.failures)} passed, {len(res.failures)} failed"
               + (f", {len(res.updated)} snapshot(s) written" if update else ""))
    sys.exit(1 if res.failures else 0)


@rules.command("lint")
@click.option("--rules", "rule_dirs", multiple=True, type=click.Path(), metavar="DIR")
@click.option("--only-user", is_flag=True, help="Lint only the rules from --rules directories.")
@click.option("--strict", is_flag=True, help="Also report named groups the rule never uses (captures kept "
                                             "only as report data).")
@click.option("--catalog/--no-catalog", default=True, show_default=True,
              help="Check that rules citing SGLang sources match a message of SGLang's catalog (typos in message "
                   "text, wrong release ranges); --no-catalog skips it.")
def rules_lint(rule_dirs: tuple[str, ...], only_user: bool, strict: bool, catalog: bool) -> None:
    """Find rule problems ahead of time: backtracking regexes, patterns without a literal,
    unknown names, flags missing from the rule's releases. Exit 1 on any."""
    from sglang_doctor.ruledev.catalog_lint import catalog_installed
    from sglang_doctor.ruledev.lint import lint_rules

    picked = load_rules(rule_dirs)
    if only_user:
        roots = [Path(d).resolve() for d in rule_dirs]
        picked = [r for r in picked if r.path and any(Path(r.path).resolve().is_relative_to(d) for d in roots)]
    if catalog and not catalog_installed():
        click.echo("sglang-doctor: the message catalog is not installed; linted without it (--no-catalog)", err=True)
        catalog = False
    problems = lint_rules(picked, strict=strict, catalog=catalog)
    for p in problems:
        click.echo(str(p))
    click.echo(f"sglang-doctor: {len(picked)} rules linted, {len(problems)} problem(s)", err=True)
    sys.exit(1 if problems else 0)


@rules.command("docs")
@click.option("--out", "out_dir", default="docs/rules", show_default=True, type=click.Path())
@click.option("--check", "check_only", is_flag=True, help="Exit 1 if the pages are out of date; write nothing.")
def rules_docs(out_dir: str, check_only: bool) -> None:
    """Write one Markdown page per rule (docs/rules/<code>-<id>.md)."""
    from sglang_doctor.ruledev.docs import write_docs, write_facts_table

    stale = write_docs(load_rules(()), Path(out_dir), check_only=check_only)
    guide = Path(out_dir).parent / "writing-rules.md"  # its facts table comes from the fact vocabulary
    if write_facts_table(guide, check_only=check_only):
        stale.append(str(guide))
    if check_only and stale:
        for s in stale:
            click.echo(f"out of date: {s}")
        sys.exit(1)
    click.echo(f"{'checked' if check_only else 'wrote'} rule pages in {out_dir}")


if __name__ == "__main__":  # pragma: no cover
    main()
