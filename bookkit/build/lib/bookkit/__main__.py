"""``python -m bookkit run|bench|sync|release|pdf [...]``: the Makefile's commands."""

import importlib
import sys

MODULES = {"run": "run", "bench": "bench", "sync": "edition", "release": "edition",
           "pdf": "browser"}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in MODULES:
        sys.exit(__doc__)
    module = importlib.import_module(f"bookkit.{MODULES[sys.argv[1]]}")
    sys.exit(module.main(sys.argv[1:]) if MODULES[sys.argv[1]] == "edition"
             else module.main(sys.argv[2:]))
