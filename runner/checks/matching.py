"""Maximum bipartite matching, for ``expect.trace.calls``: each expected call paired with its own call.

Kuhn's augmenting-path algorithm (H. W. Kuhn, "The Hungarian method for the assignment problem",
Naval Research Logistics Quarterly 2, 1955; the form in every algorithms text): for each left
vertex in turn, search for a path that alternates between unmatched and matched edges and ends at
a free right vertex, and flip it. It finds a matching of maximum size in O(V * E); a case's
expected calls and a run's calls are few, so this beats Hopcroft-Karp's bookkeeping.
"""

from __future__ import annotations

from collections.abc import Sequence


def maximum_matching(edges: Sequence[Sequence[int]], right: int) -> list[int | None]:
    """The partner (a right vertex in ``range(right)``) of each left vertex, or None, in a maximum matching.

    ``edges[i]`` lists the right vertices left vertex ``i`` may be paired with, in the order to try
    them (so ties go to the earlier one). The recursion is as deep as there are left vertices.
    """
    owner: list[int | None] = [None] * right

    def augment(left: int, seen: set[int]) -> bool:
        for vertex in edges[left]:
            if vertex in seen:
                continue
            seen.add(vertex)
            current = owner[vertex]
            if current is None or augment(current, seen):
                owner[vertex] = left
                return True
        return False

    for left in range(len(edges)):
        augment(left, set())
    partner: list[int | None] = [None] * len(edges)
    for vertex, matched in enumerate(owner):
        if matched is not None:
            partner[matched] = vertex
    return partner


def ordered_matching(edges: Sequence[Sequence[int]]) -> list[int | None]:
    """The partner of each left vertex when partners must rise with the left index (``calls_ordered``),
    or None for one that found none after the previous partner.

    Each left vertex takes the first allowed right vertex after the last partner, which embeds the
    whole left sequence whenever any rising assignment does (the greedy subsequence argument: an
    earlier partner never leaves fewer choices to the vertices after it). ``edges[i]`` must be sorted.
    """
    partner: list[int | None] = []
    last = -1
    for allowed in edges:
        chosen = next((vertex for vertex in allowed if vertex > last), None)
        partner.append(chosen)
        if chosen is not None:
            last = chosen
    return partner
