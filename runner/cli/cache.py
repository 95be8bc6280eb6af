"""``tooltrial cache info DIR`` and ``tooltrial cache clear DIR``: the response cache ``run --cache DIR`` keeps."""

from __future__ import annotations

import argparse
from pathlib import Path

from runner.errors import ExitCode
from runner.providers.cache import open_cache
from runner.text import plural


def add(sub: argparse._SubParsersAction) -> None:
    """The ``cache`` subcommand's parser, with ``info`` and ``clear``."""
    parser = sub.add_parser("cache", help="show or empty a response cache that run --cache made")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION", parser_class=type(parser))
    info = actions.add_parser("info", help="how many replies the cache keeps, and its size on disk")
    info.add_argument("folder", type=Path, metavar="DIR", help="the folder given to run --cache")
    clear = actions.add_parser("clear", help="remove every reply the cache keeps")
    clear.add_argument("folder", type=Path, metavar="DIR", help="the folder given to run --cache")


def command(args: argparse.Namespace) -> int:
    """Print what the cache in ``args.folder`` holds (``info``) or empty it (``clear``); a folder that
    holds no cache is a UserError (exit 4)."""
    cache = open_cache(args.folder, create=False)
    try:
        if args.action == "clear":
            print(f"removed {_replies(cache.clear())} from {args.folder}")
        else:
            found = cache.info()
            print(f"{args.folder}: {_replies(found.entries)}, {_size(found.size)}")
    finally:
        cache.close()
    return ExitCode.OK


def _replies(count: int) -> str:
    return f"{count} {'reply' if count == 1 else 'replies'}"


def _size(count: int) -> str:
    """Bytes in words: ``512 bytes``, ``32.0 KiB``, ``1.5 MiB`` (1024 each)."""
    if count < 1024:
        return plural(count, "byte")
    size, unit = count / 1024, "KiB"
    for larger in ("MiB", "GiB"):
        if size < 1024:
            break
        size, unit = size / 1024, larger
    return f"{size:.1f} {unit}"
