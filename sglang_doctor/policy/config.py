"""Project configuration: `[tool.sglang-doctor]` in pyproject.toml or `.sglang-doctor.yaml`.

Found by walking up from the current directory (in each directory `.sglang-doctor.yaml`
is looked for first, then a pyproject.toml that has a `[tool.sglang-doctor]` table), or
named with `--config FILE`. Options given on the command line override the file.

Keys:
  enable    rule ids or codes; when present, only these rules run
  disable   rule ids or codes that never run (applied after `enable`)
  severity  {rule id or code: error|warning|info}: the severity its findings get here
  rules     extra rule directories, relative to the config file
  fail-on   error|warning|info|never
  format    one of the output formats

An unknown key or a bad value is a `ConfigError` whose one-line message names the file
and the key; the command line turns it into exit status 2.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sglang_doctor.model import FAIL_ON, FORMATS, SEVERITIES, SEVERITY_RANK, Finding


def _toml() -> Any:
    """The TOML parser, imported only when a pyproject.toml may hold our table."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    return tomllib

YAML_NAME = ".sglang-doctor.yaml"
PYPROJECT = "pyproject.toml"
TOOL_TABLE = "sglang-doctor"
# `[tool.sglang-doctor]`, `[tool."sglang-doctor"]`, `tool.sglang-doctor.x = ` or, under `[tool]`,
# a key `sglang-doctor = {...}` / `sglang-doctor.x = `: only then is the file worth parsing.
# `[tool.sglang-doctor]`, `tool.sglang-doctor.x = …`, or under a bare `[tool]` table a key
# `sglang-doctor…` (alone, that key is also the `[project.scripts]` entry of a tool of this name)
_MAY_HAVE_TABLE = re.compile(r"""\btool\s*\.\s*["']?sglang-doctor|^\s*\[\s*tool\s*\]\s*$(?s:.*)^\s*["']?sglang-doctor["']?\s*[.=]""",
                             re.M)
KEYS = ("disable", "enable", "severity", "rules", "fail-on", "format")


class ConfigError(Exception):
    """A config file that cannot be used; the message is one line naming the file and key."""


@dataclass
class Config:
    """Settings read from .sglang-doctor.yaml or pyproject.toml."""

    path: Path | None = None  # the file read, None when there is none
    enable: list[str] | None = None
    disable: list[str] = field(default_factory=list)
    severity: dict[str, str] = field(default_factory=dict)
    rules: list[str] = field(default_factory=list)  # absolute directories
    fail_on: str | None = None
    format: str | None = None

    def where(self, key: str) -> str:
        if self.path is not None and self.path.name.endswith(".toml"):
            return f"{self.path}: [tool.{TOOL_TABLE}] {key}"
        return f"{self.path}: {key}"


def _has_tool_table(path: Path) -> bool:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    if not _MAY_HAVE_TABLE.search(text):  # most projects' pyproject.toml: no need to parse it
        return False
    tomllib = _toml()
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:  # it names our table but cannot be read: say so, never skip it
        raise _toml_error(path, e) from None
    return isinstance(data.get("tool"), dict) and TOOL_TABLE in data["tool"]


def _toml_error(path: Path, e: Exception) -> ConfigError:
    """`pyproject.toml:3: invalid TOML: …` (the parser says `at line 3, column 10`)."""
    m = re.search(r"at line (\d+)", str(e))
    return ConfigError(f"{path}{':' + m[1] if m else ''}: invalid TOML: {e}")


def find_config(start: Path | None = None) -> Path | None:
    """The nearest config file from `start` (default: the cwd) up to the filesystem root.

    Raises ConfigError for a pyproject.toml that names `tool.sglang-doctor` but is not valid TOML.
    """
    here = (start or Path.cwd()).resolve()
    for d in (here, *here.parents):
        y = d / YAML_NAME
        if y.is_file():
            return y
        p = d / PYPROJECT
        if p.is_file() and _has_tool_table(p):
            return p
    return None


def _read_table(path: Path) -> dict[str, Any]:
    from sglang_doctor.read.reader import read_small_text

    text = read_small_text(path, "config", ConfigError)
    if path.name.endswith(".toml"):
        tomllib = _toml()
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise _toml_error(path, e) from None
        tool = data.get("tool")
        if not isinstance(tool, dict) or TOOL_TABLE not in tool:
            raise ConfigError(f"{path}: no [tool.{TOOL_TABLE}] table")
        table = tool[TOOL_TABLE]
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: [tool.{TOOL_TABLE}] must be a table")
        return table
    from sglang_doctor.read.safe_yaml import YamlError, load_yaml

    try:
        data = load_yaml(text)
    except YamlError as e:
        raise ConfigError(f"{path}: {e}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the config file holds one mapping of keys ({', '.join(KEYS)})")
    return data


def _names(cfg: Config, key: str, value: Any) -> list[str]:
    if isinstance(value, str) or not isinstance(value, list) or not all(isinstance(x, str) and x for x in value):
        raise ConfigError(f"{cfg.where(key)}: must be a list of rule ids or codes")
    return list(value)


def _choice(cfg: Config, key: str, value: Any, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise ConfigError(f"{cfg.where(key)}: must be one of {', '.join(allowed)} (got {value!r})")
    return value


def load_config(path: Path) -> Config:
    """Read and check one config file (structure only; rule names are checked by apply_to_rules)."""
    cfg = Config(path=path)
    table = _read_table(path)
    for key, value in table.items():
        if key not in KEYS:
            import difflib

            near = difflib.get_close_matches(str(key), KEYS, n=1)
            hint = f" (did you mean '{near[0]}'?)" if near else f" (known keys: {', '.join(KEYS)})"
            table_name = f" [tool.{TOOL_TABLE}]" if path.name.endswith(".toml") else ""
            raise ConfigError(f"{path}:{table_name} unknown key {str(key)!r}{hint}")
        if key == "enable":
            cfg.enable = _names(cfg, key, value)
        elif key == "disable":
            cfg.disable = _names(cfg, key, value)
        elif key == "severity":
            if not isinstance(value, dict):
                raise ConfigError(f"{cfg.where(key)}: must be a mapping of rule id or code to error, warning or info")
            for name, sev in value.items():
                _choice(cfg, f"severity.{name}", sev, SEVERITIES)
            cfg.severity = {str(k): v for k, v in value.items()}
        elif key == "rules":
            if isinstance(value, str) or not isinstance(value, list) or not all(isinstance(x, str) and x for x in value):
                raise ConfigError(f"{cfg.where(key)}: must be a list of directories")
            dirs = []
            for d in value:
                p = (path.parent / d).resolve()
                if not p.is_dir():
                    raise ConfigError(f"{cfg.where(key)}: rules directory {d!r} not found (relative to {path.parent})")
                dirs.append(str(p))
            cfg.rules = dirs
        elif key == "fail-on":
            cfg.fail_on = _choice(cfg, key, value, FAIL_ON)
        elif key == "format":
            cfg.format = _choice(cfg, key, value, FORMATS)
    return cfg


def resolve_config(explicit: str | None, start: Path | None = None) -> Config:
    """`--config FILE` when given, else the nearest config file, else an empty Config."""
    if explicit:
        return load_config(Path(explicit))
    found = find_config(start)
    return load_config(found) if found else Config()


def apply_to_rules(cfg: Config, rules: list[Any]) -> tuple[list[Any], dict[str, str]]:
    """The rules this project runs (`enable` as an allowlist, then `disable`), and the
    severity overrides by rule id. Every name is checked against the loaded rules."""
    by_name: dict[str, Any] = {}
    for r in rules:
        by_name[r.id] = r
        by_name[r.code] = r

    def lookup(key: str, name: str) -> Any:
        r = by_name.get(name)
        if r is None:
            import difflib

            near = difflib.get_close_matches(name, list(by_name), n=1)
            hint = f"; did you mean '{near[0]}'?" if near else "; see `sglang-doctor rules list`"
            raise ConfigError(f"{cfg.where(key)}: no rule with id or code {name!r}{hint}")
        return r

    keep = rules
    if cfg.enable is not None:
        wanted = {lookup("enable", n).id for n in cfg.enable}
        keep = [r for r in keep if r.id in wanted]
    if cfg.disable:
        dropped = {lookup("disable", n).id for n in cfg.disable}
        keep = [r for r in keep if r.id not in dropped]
    severity = {lookup(f"severity.{n}", n).id: s for n, s in cfg.severity.items()}
    return keep, severity


def apply_severity(severity: dict[str, str], findings: list[Finding]) -> list[Finding]:
    """The findings with the project's severity for their rule, after the engine ranked them (so a
    downgraded root cause still explains, and hides, the generic errors it causes); most severe
    first again, input by input."""
    if not severity or not any(severity.get(f.rule, f.severity) != f.severity for f in findings):
        return findings
    out = [replace(f, severity=severity[f.rule]) if severity.get(f.rule, f.severity) != f.severity else f
           for f in findings]
    return sorted(out, key=lambda f: (f.evidence[0].input if f.evidence else 0, SEVERITY_RANK[f.severity]))
