"""What a run ran on, fingerprinted (runner.spec.fingerprint): the case, the prompt template, the fixture tree,
the tools offered, the simulated user's persona and the judge's rubric; and the software and settings it ran
with: tooltrial's version and commit, litellm's version, the model and its request parameters, the sandbox.
``report A B`` compares them (runner.scoring.inputs).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import runner
from runner.spec.case import Case
from runner.spec.fingerprint import case_parts, digest, fixture_digest


@dataclass(frozen=True)
class Provenance:
    """The inputs of one run, each a hex SHA-256 of its canonical form (runner.spec.fingerprint) unless said.

    Attributes:
        case: the case as loaded, defaults merged (every part of ``case_parts``).
        case_parts: each part of the case (``turns``, ``user``, ``system``, ``files``, ``setup``, ``tools``,
            ``expect``, ``script``, ``other``; ``judge`` when it has one) -> its fingerprint.
        prompt: the system prompt template's text the run rendered (the arm's, or the case's ``system``).
        fixture: the fixture tree (paths, modes, contents), None without a fixture.
        tools: the tool definitions offered (name, description, parameter schema), in the order offered.
        persona: the simulated user's persona template, None without one.
        rubric: the judge's rubric, None without one.
        tooltrial: tooltrial's version; commit: the git commit of its checkout, None when installed.
        litellm: litellm's version when this process had imported it, else None (never imported for this).
        model: the model string the arm sent (the provider's name where it has none, as ``scripted``).
        params: the request parameters the arm sent besides the model (``api_base``, ``temperature``,
            ``max_tokens``, ``params``, ``stream``), {} for a provider without any.
        sandbox: the sandbox mode (``bwrap`` or ``none``).
        faults: the arm's fault profile (``run --faults FILE``: what the file holds), None for none.
        tool_defs: the arm's tool-definition file (``-T``, runner.spec.tooldefs), None without one.
    """

    case: str
    case_parts: dict[str, str]
    prompt: str
    tools: str
    tooltrial: str
    model: str
    sandbox: str
    fixture: str | None = None
    persona: str | None = None
    rubric: str | None = None
    commit: str | None = None
    litellm: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    faults: str | None = None
    tool_defs: str | None = None


def provenance(case: Case, prompt: str, tools: list[dict[str, Any]], identity: Mapping[str, Any] | None,
               provider: str, sandbox: str, tool_defs: str | None = None, faults: str | None = None) -> Provenance:
    """The Provenance of a run of ``case`` rendering the template text ``prompt``, offering ``tools`` (their
    definitions as the model is shown them), with the arm's ``identity`` (its ``cache_identity``: ``model`` and
    the request parameters; None for a provider without one, named ``provider``) under ``sandbox`` mode, with the
    fingerprint of the arm's tool-definition file ``tool_defs`` and that of its fault profile ``faults`` (each None
    without one)."""
    parts = case_parts(case)
    settings = {k: v for k, v in (identity or {}).items() if k not in ("provider", "model")}
    return Provenance(
        case=digest(parts), case_parts=parts, prompt=digest(prompt), tools=digest(tools),
        tooltrial=runner.__version__, model=str((identity or {}).get("model", provider)), sandbox=sandbox,
        fixture=fixture_digest(case),
        persona=None if case.user is None else digest(case.user.persona),
        rubric=None if case.expect.judge is None else digest(case.expect.judge.rubric),
        commit=checkout_commit(), litellm=_litellm_version(), params=settings, tool_defs=tool_defs,
        faults=faults,
    )


def _litellm_version() -> str | None:
    """litellm's version when it is imported in this process, else None."""
    return _installed_litellm() if "litellm" in sys.modules else None


@functools.cache  # a scan of the installed packages' metadata: once a process, not once a run
def _installed_litellm() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("litellm")
    except PackageNotFoundError:
        return None


@functools.cache
def checkout_commit() -> str | None:
    """The commit checked out where tooltrial's package lives (read from ``.git``, a worktree's too), None when
    it is not a git checkout; found once a process."""
    git = Path(runner.__file__).resolve().parent.parent / ".git"
    try:
        if git.is_file():  # a worktree: "gitdir: PATH"
            git = Path(git.read_text(encoding="utf-8").removeprefix("gitdir:").strip())
        head = (git / "HEAD").read_text(encoding="utf-8").strip()
        if not head.startswith("ref:"):
            return head
        ref = head.removeprefix("ref:").strip()
        for folder in (git, _common(git)):
            if (folder / ref).is_file():
                return (folder / ref).read_text(encoding="utf-8").strip()
            packed = folder / "packed-refs"
            if packed.is_file():
                found = [line.split()[0] for line in packed.read_text(encoding="utf-8").splitlines()
                         if line.endswith(f" {ref}")]
                if found:
                    return found[0]
    except OSError:
        return None
    return None


def _common(git: Path) -> Path:
    """A worktree's common git folder (``commondir``), else ``git`` itself."""
    common = git / "commondir"
    return (git / common.read_text(encoding="utf-8").strip()).resolve() if common.is_file() else git
