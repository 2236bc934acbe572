#!/usr/bin/env python3
"""Counts the lines of src/ that are not test code, at a git revision (default HEAD):
every .rs file minus tests.rs files, the files of modules declared under #[cfg(test)]
(`#[cfg(test)] mod corpus;`), and the items under #[cfg(test)] (a mod tests {..} block
or a single item). The figure issue #9 tracks: refactors must not grow it. With PATHs, only the files
under them count (issue #27 measures `src/run/` this way), each PATH with its own figure.

    scripts/nontest-lines.py [REV] [PATH...]
"""
import re
import subprocess
import sys


def git(*args):
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout


# Raw, plain and char literals and line comments on one line, whose braces are not
# the code's.
LITERALS = re.compile(r'\bb?r(#*)".*?"\1|"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])\'|//.*')


def code_only(line):
    return LITERALS.sub("", line)


def non_test_lines(text):
    lines, i, n = text.splitlines(), 0, 0
    while i < len(lines):
        if lines[i].strip() == "#[cfg(test)]":
            depth, opened, i = 0, False, i + 1
            while i < len(lines):
                line = code_only(lines[i])
                depth += line.count("{") - line.count("}")
                opened = opened or "{" in line
                i += 1
                if (opened and depth <= 0) or (not opened and line.rstrip().endswith(";")):
                    break
            continue
        n, i = n + 1, i + 1
    return n


def test_only_modules(rev, paths):
    """The files of `#[cfg(test)] mod name;` declarations: test code kept in its own file."""
    found = set()
    for path in paths:
        lines = git("show", f"{rev}:{path}").splitlines()
        folder = path.rsplit("/", 1)[0]
        if not path.endswith(("/mod.rs", "/lib.rs", "/main.rs")):
            folder = path[: -len(".rs")]
        for above, line in zip(lines, lines[1:]):
            m = re.fullmatch(r"\s*(?:pub(?:\(crate\))? )?mod (\w+);", line)
            if above.strip() == "#[cfg(test)]" and m:
                found |= {f"{folder}/{m[1]}.rs", f"{folder}/{m[1]}/mod.rs"}
    return found


args = sys.argv[1:]
rev = args.pop(0) if args and not args[0].startswith("src") else "HEAD"
places = [a if a.endswith(".rs") else a.rstrip("/") + "/" for a in args] or ["src/"]
paths = [p for p in git("ls-tree", "-r", "--name-only", rev, "src").split() if p.endswith(".rs")]
skipped = test_only_modules(rev, paths)
counted = {
    path: non_test_lines(git("show", f"{rev}:{path}"))
    for path in paths
    if not path.endswith("/tests.rs") and "/tests/" not in path and path not in skipped
}
for place in places:
    total = sum(n for path, n in counted.items() if path == place or path.startswith(place))
    print(f"{rev}: {total} non-test lines in {place}")
