"""The unit of analysis: one launch, or the logs of one deployment's ranks and nodes read together.

An input may hold several launches (a restarted server); each is its own unit, with its own
facts, findings, startup summary and corrected command. Several inputs are several units,
except the logs of ONE deployment (one per node or rank): those are merged, so that a crash on
one node explains the timeouts on the others (engine.attribution). Two single-launch inputs
belong to one deployment when nothing they state disagrees: their server_args are the same
apart from the fields that differ per node, and, when either lacks a server_args line, their
timestamps overlap or lie within the NCCL watchdog's default timeout of each other (a peer's
collective fails up to that long after a node died; logs without times cannot be placed side by
side, so they stay apart).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sglang_doctor.engine.analyze import InputResult, LaunchResult
from sglang_doctor.read.records import ts_seconds

# server_args fields a node of a deployment sets for itself.
PER_NODE_FIELDS = frozenset({"node_rank", "host", "port", "dist_init_addr", "nccl_port", "base_gpu_id",
                             "random_seed", "log_level", "enable_metrics", "file_storage_path",
                             "disaggregation_bootstrap_port", "api_key", "admin_api_key"})


@dataclass
class Unit:
    """One launch, or one deployment's launches on several inputs (the first is the primary)."""

    launches: list[LaunchResult] = field(default_factory=list)

    @property
    def primary(self) -> LaunchResult:
        """The launch whose facts speak for the unit: the first that states server_args, else the first."""
        return next((la for la in self.launches if la.context.server_args), self.launches[0])

    @property
    def inputs(self) -> list[int]:
        return [la.input for la in self.launches]


def _window(la: LaunchResult) -> tuple[str, str] | None:
    """The launch's first and last logged times (ISO, to the second), from its records and findings."""
    times = [e.ts for f in la.findings for e in f.evidence if e.ts]
    times += [t.replace(" ", "T")[:19] for t in (la.context.first_ts, la.context.last_ts) if t]
    return (min(times), max(times)) if times else None


# PyTorch's default NCCL collective timeout (10 min) plus a margin: how long after one node's crash
# another node's aborted collective may be logged.
PEER_DELAY_S = 660


def _gap_s(a: str, b: str) -> float:
    """Seconds from ISO time `a` to the later `b` (0 when they cannot be read)."""
    try:
        return float(ts_seconds(b) - ts_seconds(a))
    except ValueError:
        return 0.0


def _deployment_key(server_args: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, repr(v)) for k, v in server_args.items() if k not in PER_NODE_FIELDS))


def same_deployment(a: LaunchResult, b: LaunchResult) -> bool:
    sa, sb = a.context.server_args, b.context.server_args
    if sa and sb:
        return _deployment_key(sa) == _deployment_key(sb)
    wa, wb = _window(a), _window(b)
    if wa is None or wb is None:
        return False
    if (wa[1] < wb[0] and _gap_s(wa[1], wb[0]) > PEER_DELAY_S) or (wb[1] < wa[0] and _gap_s(wb[1], wa[0]) > PEER_DELAY_S):
        return False
    ma, mb = a.context.get("model.arch"), b.context.get("model.arch")
    return not (ma and mb and ma != mb)


def group_units(results: list[InputResult]) -> list[Unit]:
    """Units in report order: inputs in order, an input's launches the last one first; the inputs of
    one deployment form one unit, placed where its first input is."""
    units: list[tuple[Unit, bool]] = []  # (unit, whether another input may join it)
    for res in results:
        launches = res.launches or [LaunchResult(0, 1, res.lines, res.findings, res.context)]
        if len(launches) > 1:  # a restarted server: its launches are never another input's ranks
            units.extend((Unit([la]), False) for la in launches)
            continue
        la = launches[0]
        target = next((u for u, open_ in units if open_ and all(same_deployment(la, o) for o in u.launches)), None)
        if target is not None:
            target.launches.append(la)
        else:
            units.append((Unit([la]), True))
    return [u for u, _ in units]
