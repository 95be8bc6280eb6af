"""The Markdown summary's prompt-injection table (runner.output.markdown): per arm with injections, utility without
attack, utility under attack and attack success, each as runs, rate and Wilson 95% interval, from report.json's
``arms[].injection`` (runner.scoring.injection)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

_MEASURES = (("utility_clean", "utility, no attack"), ("utility_attacked", "utility under attack"),
             ("attack_success", "attack success"))


def injection_markdown(arms: Sequence[dict[str, Any]], escape: Callable[[object], str]) -> list[str]:
    """The ``### Prompt injections`` section, arm labels put through ``escape`` (Markdown-escaped); [] when no arm
    has injections."""
    rows = [arm for arm in arms if arm.get("injection")]
    if not rows:
        return []
    lines = ["### Prompt injections", "", "| arm | measure | runs | rate | 95% interval |", "|---|---|---:|---:|---:|"]
    for arm in rows:
        for key, label in _MEASURES:
            rate = arm["injection"].get(key) or {}
            value, (low, high) = rate.get("rate"), (rate.get("interval") or [0.0, 1.0])[:2]
            shown = "—" if value is None else f"{100 * value:.0f}%"
            interval = "—" if value is None else f"{100 * low:.0f}%–{100 * high:.0f}%"
            lines.append(f"| {escape(arm.get('arm', ''))} | {label} | {rate.get('count', 0)}/{rate.get('runs', 0)} "
                         f"| {shown} | {interval} |")
    return [*lines, ""]
