"""The one privacy policy (core/graph/privacy.py): never_send hides nodes from remote providers and MCP
clients, never from a model on this machine; every path asks it rather than working the rule out."""

from __future__ import annotations

from pathlib import Path

from core.graph.privacy import SendPolicy

ROOT = Path(__file__).resolve().parent.parent


class _Provider:
    def __init__(self, remote: bool):
        self.remote = remote


def test_never_send_hides_from_a_remote_provider_only():
    private = {"id": 1, "dimensions": ["Private", "work"]}
    public = {"id": 2, "dimensions": ["work"]}
    remote = SendPolicy.for_provider(["private"], _Provider(remote=True))
    local = SendPolicy.for_provider(["private"], _Provider(remote=False))
    assert remote.restricts and not remote.allows(private) and remote.allows(public)
    assert not local.restricts and local.allows(private)
    assert not remote.allows_dimension("PRIVATE") and remote.allows_dimension("work")


def test_mcp_clients_never_see_never_send_nodes():
    policy = SendPolicy.for_mcp(["Secret"])
    assert not policy.allows({"dimensions": ["secret"]})
    assert policy.allows({"dimensions": []}) and policy.allows({})


def test_no_other_module_works_the_rule_out_again():
    """`provider.remote` decides what may be sent only inside the policy: a second copy of the rule
    (`never_send if provider.remote`) is one edit away from a leak."""
    offenders = []
    for path in sorted([*ROOT.glob("core/**/*.py"), *ROOT.glob("tui/**/*.py")]):
        if path.name == "privacy.py":
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if "never_send" in line and ".remote" in line:
                offenders.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert offenders == []
