"""The commands the documentation quotes run as written (issue 36).

Every command quoted in README.md, CONTRIBUTING.md and the instructors' page (a line of a code
block, or inline code) that starts with ``make``, ``python`` or ``.venv/bin/`` must work in a new
shell of a fresh clone after the set-up step, without activating ``.venv``: a ``make`` command
is dry-run (``make -n``, which executes nothing but the Makefile's own checks), a program of the
environment is asked for its ``--help`` (the command's words up to its first argument, then
``--help``), each under a time limit and with no install. A bare ``python``, ``pytest``,
``jupytext`` or ``otter`` is an error: outside the activated environment it is not the book's
(``No module named 'otter'``).
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ("README.md", "CONTRIBUTING.md", "book/instructors.md")
#: programs that only the book's environment has: quoted bare, they fail in a new shell
BARE = re.compile(r"^(python3?|pytest|jupytext|otter|ruff|jupyter-book|jupyter)(\s|$)")
RUN = re.compile(r"^(make|python|\.venv/bin/)")
FENCE = re.compile(r"^```+[^\n]*\n(.*?)^```+\s*$", re.M | re.S)


def quoted_commands(text: str) -> list[str]:
    """The commands quoted in a Markdown text: each line of a fenced code block (its comment cut
    off) and each inline code span of two words or more (whitespace collapsed), in order; MyST
    directives and substitutions (``{…}``) are not commands."""
    commands = []
    for block in FENCE.findall(text):
        for line in block.splitlines():
            line = re.sub(r"\s+#.*$", "", line).strip()
            if line and not line.startswith(("#", ":", "{")):
                commands.append(line)
    prose = FENCE.sub("", text)
    commands += [" ".join(m.split()) for m in re.findall(r"(?<!`)`([^`]+)`(?!`)", prose)]
    # a word alone (`otter`, `make`, `.venv/bin/python`) names a program; a command has arguments
    return [c for c in commands if "{{" not in c and not c.startswith("{") and " " in c]


def _documented() -> list[tuple[str, str]]:
    return [(doc, c) for doc in DOCS
            for c in quoted_commands((ROOT / doc).read_text(encoding="utf-8"))]


def help_form(command: str) -> list[str]:
    """What to run to check ``command`` without doing its work: ``make -n …`` for make, else the
    program with its module (``-m x``) and subcommand words, or its script, then ``--help``."""
    words = shlex.split(command)
    if words[0] == "make":
        return ["make", "-n", *words[1:]]
    bin_dir = Path(sys.executable).parent  # this environment's .venv/bin
    form = [str(bin_dir / words[0].removeprefix(".venv/bin/"))]
    rest = words[1:]
    if rest[:1] == ["-m"]:
        form, rest = form + rest[:2], rest[2:]
    elif rest and rest[0].endswith(".py"):  # a script: what follows are its arguments
        return [*form, rest[0], "--help"]
    while rest and re.fullmatch(r"[a-z][a-z0-9_-]*", rest[0]):
        form, rest = form + rest[:1], rest[1:]
    return [*form, "--help"]


def test_the_extractor_reads_blocks_and_inline_code():
    text = ("Run `make run CHAPTER=book/NN_name.md` or\n`.venv/bin/python -m bookkit\nrun x`.\n\n"
            "```bash\nmake install   # Linux\n# a comment\n```\n\n```{chapter-plan}\n```\n"
            "{{ pin_pip }} and `{doc}`.\n")
    assert quoted_commands(text) == ["make install", "make run CHAPTER=book/NN_name.md",
                                     ".venv/bin/python -m bookkit run x"]
    assert help_form(".venv/bin/python -m bookkit release X.Y.Z")[1:] == [
        "-m", "bookkit", "release", "--help"]
    assert help_form(".venv/bin/python assignments/grade.py a b")[1:] == [
        "assignments/grade.py", "--help"]
    assert help_form("make grade ASSIGNMENT=x") == ["make", "-n", "grade", "ASSIGNMENT=x"]


def test_no_documented_command_needs_an_activated_environment():
    bare = [f"{doc}: `{c}`" for doc, c in _documented()
            if BARE.match(c) and not c.startswith("python3.11")]
    assert not bare, ("commands that fail in a new shell (use a make target or .venv/bin/…):\n"
                      + "\n".join(bare))


COMMANDS = sorted({c for _, c in _documented() if RUN.match(c) and not c.startswith("python3.11")})


def test_the_documentation_quotes_commands():
    assert any(c.startswith("make run ") for c in COMMANDS), COMMANDS
    assert any(c.startswith("make grade ") for c in COMMANDS), COMMANDS


@pytest.mark.parametrize("command", COMMANDS)
def test_a_documented_command_runs_as_written(command):
    """Its dry run or its ``--help`` succeeds from the repository's root within 60 s."""
    if command.split()[0] == "make":  # through the shell, which expands $(…) and quotes
        argv = ["bash", "-c", "make -n" + command[len("make"):]]
    else:
        argv = help_form(command)
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, (f"`{command}` (checked as `{' '.join(argv)}`) exits "
                                  f"{proc.returncode}:\n{proc.stderr[-2000:]}")
