"""``python -m bookkit run|bench|stress|seeds|sync|release|pdf [...]``: the Makefile's commands."""

import importlib
import sys

COMMANDS = {"run": "run", "bench": "bench", "stress": "sweeps", "seeds": "sweeps",
            "sync": "edition", "release": "edition", "pdf": "browser"}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in COMMANDS:
        print(__doc__.strip().split(":")[0], file=sys.stderr)
        return 2
    module = importlib.import_module(f"bookkit.{COMMANDS[argv[0]]}")
    shared = argv[0] in ("stress", "seeds", "sync", "release")  # one module, two commands
    return module.main(argv[1:], argv[0]) if shared else module.main(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
