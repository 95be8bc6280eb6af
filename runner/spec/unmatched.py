"""Why ``-c`` and ``--tag`` selected no case: which filter matched nothing, and the nearest ids or
tags (difflib), one line each, for the ``no case selected`` message."""

from __future__ import annotations

import difflib
import fnmatch
import shlex
from collections.abc import Sequence

from runner.spec.case import Case
from runner.spec.discover import select

_NAMED = 3  # ids or tags a hint names


def why_none_selected(cases: Sequence[Case], globs: Sequence[str], tags: Sequence[str]) -> list[str]:
    """The reasons ``select(cases, globs, tags)`` is empty, one line each; ``[]`` when it is not.

    A glob that matches no full id is named with what it would match as an id alone (``-c`` matches
    ``group/id``: ``'*/GLOB'``) or as a group (``'GLOB/*'``), else with its group part made the
    nearest group's (``serch/*``: ``'search/*'``), else the nearest full ids and groups; a tag no case
    has with the tag that differs only in case, or the nearest tags; filters that each match but never
    together, with both counts.
    """
    if select(cases, globs, tags):
        return []
    if not cases:
        return ["the case sources hold no case ('tooltrial list --sources' shows where cases are read from)"]
    lines = [_why_glob(glob, cases) for glob in globs if not select(cases, [glob])]
    lines += [_why_tag(tag, cases) for tag in tags if not select(cases, tags=[tag])]
    if not lines:  # each filter matches some case, and no case matches a glob and a tag
        by_glob, by_tag = select(cases, globs), select(cases, tags=tags)
        have = sorted({tag for case in by_glob for tag in case.tags})
        lines.append(f"{_flags('-c', globs)} matches {_plural(len(by_glob), 'case')} and {_flags('--tag', tags)}"
                     f" {len(by_tag)}, but no case both (the tags of the {len(by_glob)}: {_some(have) if have else 'none'})")
    return lines


def _why_glob(glob: str, cases: Sequence[Case]) -> str:
    full_ids = [case.full_id for case in cases]
    groups = list(dict.fromkeys(case.group for case in cases))
    if "/" not in glob:
        ids = [case.full_id for case in select(cases, [f"*/{glob}"])]
        if ids:
            named = " or ".join(f"-c {full_id}" for full_id in ids[:_NAMED])
            more = f" (and {len(ids) - _NAMED} more)" if len(ids) > _NAMED else ""
            return (f"-c {glob} is matched against group/id, not the id alone"
                    f" (did you mean {named}{more}, or -c '*/{glob}' for every group?)")
        if any(fnmatch.fnmatchcase(group, glob) for group in groups):
            return f"-c {glob} is matched against group/id, not the group alone ({_hint([f'{glob}/*'])})"
        near = {case.id: case.full_id for case in cases} | {group: f"{group}/*" for group in groups}
        hint = _hint(_close(glob, near))
        return f"-c {glob} is matched against group/id, and no case's id matches it either ({hint})"
    close = _regrouped(glob, groups, cases) or _close(glob, dict(zip(full_ids, full_ids)))
    return f"-c {glob} matches no case's group/id ({_hint(close)})"


def _regrouped(glob: str, groups: list[str], cases: Sequence[Case]) -> list[str]:
    """``glob`` with its group part, which names no group, replaced by the nearest groups' names,
    those that select a case: ``serch/*`` gives ``search/*``."""
    group, rest = glob.split("/", 1)
    if any(fnmatch.fnmatchcase(name, group) for name in groups):
        return []
    near = _close(group, dict(zip(groups, groups)))
    return [f"{name}/{rest}" for name in near if select(cases, [f"{name}/{rest}"])]


def _hint(close: list[str]) -> str:
    """The did-you-mean of ``close`` globs or ids, each as a shell takes it (``-c 'search/*'``)."""
    named = " or ".join(f"-c {shlex.quote(c)}" for c in close)
    return f"did you mean {named}?" if close else "'tooltrial list' shows them"


def _why_tag(tag: str, cases: Sequence[Case]) -> str:
    known = sorted({t for case in cases for t in case.tags})
    if not known:
        return f"--tag {tag}: no case has any tag"
    same = [t for t in known if t.lower() == tag.lower()]
    close = same or difflib.get_close_matches(tag, known, n=_NAMED)
    hint = (f"tags match exactly, case too: did you mean --tag {same[0]}?" if same else
            f"did you mean {' or '.join(f'--tag {t}' for t in close)}?" if close else f"the cases' tags: {_some(known)}")
    return f"--tag {tag}: no case has this tag ({hint})"


def _close(glob: str, names: dict[str, str]) -> list[str]:
    """The full ids (``names``' values) of the names nearest ``glob``, its glob characters left out."""
    bare = glob.replace("*", "").replace("?", "")
    return list(dict.fromkeys(names[n] for n in difflib.get_close_matches(bare, list(names), n=_NAMED)))


def _flags(flag: str, values: Sequence[str]) -> str:
    return " ".join(f"{flag} {value}" for value in values)


def _some(names: Sequence[str]) -> str:
    return ", ".join(names[:10]) + (f" (and {len(names) - 10} more)" if len(names) > 10 else "")


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
