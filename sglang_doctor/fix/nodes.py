"""One command per node of a multi-node launch: the same corrected command, each node with its own
`--node-rank` (a log is one node's; the fix belongs on every node, or the ranks disagree at start)."""

from __future__ import annotations

import copy

from sglang_doctor.launch.command import LaunchCommand

MAX_NODES = 8  # more nodes than this: one command and the rule, not a page of commands


def node_commands(cmd: LaunchCommand) -> list[LaunchCommand]:
    """The command for each node 0..nnodes-1 (none: a single node, or a count not written as a number)."""
    try:
        nnodes = int(cmd.get("--nnodes") or 1)
    except ValueError:
        return []
    if not 1 < nnodes <= MAX_NODES:
        return []
    out = []
    for rank in range(nnodes):
        node = copy.deepcopy(cmd)
        hits = [a for a in node.args if a.flag == node.canon("--node-rank")]
        if hits:
            for a in hits:
                node.set_value(a, [str(rank)])
        else:
            from sglang_doctor.launch.command import Arg

            node.args.append(Arg("--node-rank", "--node-rank", str(rank)))
        out.append(node)
    return out
