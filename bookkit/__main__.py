"""``python -m bookkit COMMAND [...]``: the Makefile's commands (``COMMAND --help``: its usage)."""

import argparse
import importlib
import sys

from bookkit.toc import NoBook

#: command: (module, what it does); each module's ``main(argv)`` parses the rest with argparse
COMMANDS = {
    "run": ("run", "execute chapters in fresh kernels: time, peak memory, the failing cell "
                   "(make run CHAPTER=book/NN_name.md)"),
    "bench": ("bench", "chapters' time and memory against the budget (make bench, stress, "
                       "seeds)"),
    "sync": ("edition", "rewrite the chapters' setup cells from _config.yml (make sync)"),
    "release": ("edition", "release an edition: two commits, no tag, no push (make release)"),
    "pdf": ("browser", "the built book as one PDF, printed by Chromium (make pdf)"),
}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bookkit", description="The book's build commands; the Makefile runs "
        "them with .venv/bin/python.", formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="commands:\n" + "\n".join(f"  {name:<8} {what}"
                                          for name, (_, what) in COMMANDS.items())
        + "\n\n`python -m bookkit COMMAND --help` gives a command's usage.")
    p.add_argument("command", choices=COMMANDS, metavar="COMMAND",
                   help="one of: " + ", ".join(COMMANDS))
    p.add_argument("args", nargs=argparse.REMAINDER, help="the command's arguments")
    return p


def main(argv: list[str]) -> int:
    p = parser()
    if not argv:
        p.error("give a COMMAND (" + ", ".join(COMMANDS) + "); --help describes them")
    args = p.parse_args(argv)
    module = importlib.import_module(f"bookkit.{COMMANDS[args.command][0]}")
    # bookkit.edition's parser takes the command itself (sync or release) as its first argument
    rest = [args.command, *args.args] if COMMANDS[args.command][0] == "edition" else args.args
    try:
        return module.main(rest)
    except NoBook as exc:  # run outside a book: one line, not a traceback
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
