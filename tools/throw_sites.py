#!/usr/bin/env python3
"""tools/throw_sites.py: every place the library and programs raise an error,
and which of them a test makes throw and checks the message of.

A throw site is a place in tensor/ layers/ graph/ optim/ data/ nets/ train/ tools/
bench/ (not tests/) that raises an error:
  - a `throw` expression (not a bare `throw;` rethrow);
  - a call of Layer::fail or Layer::fail_option in layers/: each call passes
    its whole message, so each call is its own error (the one `throw` inside
    each of the two helpers is not counted).
A helper that writes its message itself counts once, at its `throw`, however
many callers it has: throw_not_built, cuda_entry's not_built,
throw_library_error (behind GLASSBOX_CHECK_STATUS / CUDA_CHECK and the like),
checked_multiply, checked_add, parse_int, parse_number, and atomic_file's
`fail` lambda. Their callers are not sites.

Sites in *_cuda.cpp, *_cuda.h, *.cu and *.cuh files are built only with CUDA,
so they are listed apart and not counted.

Whether a site is tested is a judgement kept by hand in
tools/throw_sites_tested.txt, one line per site:
    FILE | KEY | tested TEST_FILE Suite.Name
    FILE | KEY | unreachable WHY
    FILE | KEY | gpu WHY
KEY is any piece of the site's source text (from the start of its line to the
end of its statement, whitespace collapsed) that occurs in exactly one site of
FILE; "^KEY" matches the start of that text only. "tested": that test makes that site throw and checks its message (the
exact text, or a substring that pins what is distinctive about it); a test
that checks only the exception type does not count. "unreachable": nothing
from outside can make it throw on the CPU (for the library: its public API;
for the programs: their command line); a site of the library that only a
CUDA context or device can reach is unreachable in a CPU-only build. "gpu":
reachable only where a GPU is usable, so, like the CUDA-only files, not
counted among the CPU sites. A site the table does not name is untested.

Prints every site with its status and message (string literals, with `…`
where code fills in a value), then the counts. Exits 1 if the table names a
site that does not exist or is ambiguous, names one site twice, or names a
test that does not exist; with --check (as CTest runs it), also if a CPU site
is untested.

    python3 tools/throw_sites.py                 # the working tree
    python3 tools/throw_sites.py --untested      # only what is left to do
    python3 tools/throw_sites.py --rev 14cd76d --table old_table.txt
"""
import argparse
import ast
import os
import re
import subprocess
import sys

ROOTS = ("tensor", "layers", "graph", "optim", "data", "nets", "train", "tools", "bench")
SOURCE_SUFFIXES = (".cpp", ".h", ".cu", ".cuh", ".hpp", ".cc")
CUDA_ONLY = re.compile(r"(_cuda\.(cpp|h)|\.cuh?)$")
# The helpers whose call sites are the sites (see above), and where they are defined.
CALL_SITE_HELPERS = re.compile(r"(?<![\w:.>])(fail_option|fail)\s*\(")
HELPER_DEFINITIONS = re.compile(r"\bLayer::(fail|fail_option)\s*\(")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def git(*args):
    return subprocess.run(["git", "-C", REPO, *args], check=True, capture_output=True, text=True).stdout


def list_files(rev):
    if rev:
        names = git("ls-tree", "-r", "--name-only", rev, "--", *ROOTS).split("\n")
    else:
        names = git("ls-files", "--", *ROOTS).split("\n")
    return sorted(n for n in names if n.endswith(SOURCE_SUFFIXES))


def read(rev, path):
    if rev:
        return git("show", f"{rev}:{path}")
    with open(os.path.join(REPO, path), encoding="utf-8") as f:
        return f.read()


def mask(text):
    """The text with comments and the insides of string and character literals
    blanked (newlines kept), so that keywords are found only in code."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                out[i] = " "
                i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            for j in range(i, end):
                if text[j] != "\n":
                    out[j] = " "
            i = end
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            for k in range(i + 1, min(j, n)):
                out[k] = " "
            i = j + 1
        else:
            i += 1
    return "".join(out)


def statement_end(masked, start):
    depth = 0
    for i in range(start, len(masked)):
        c = masked[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth < 0:  # the end of an enclosing expression: a throw inside a ?: or a lambda
                return i
        elif c == ";" and depth == 0:
            return i + 1
    return len(masked)


LITERAL = re.compile(r'"(?:[^"\\\n]|\\.)*"')


def message(source):
    """String literals in order, `…` wherever code comes between them."""
    parts, last = [], 0
    for m in LITERAL.finditer(source):
        between = source[last:m.start()]
        if not parts:
            between = between[between.rfind("(") + 1:]  # from the call that takes the first literal
        if re.search(r"[^\s,]", between):
            parts.append("…")
        parts.append(ast.literal_eval(m.group(0)))
        last = m.end()
    if not parts:
        return "{" + " ".join(source.split()) + "}"
    if re.search(r"[^\s,);]", source[last:]):
        parts.append("…")
    return "".join(parts)


def enclosing_definition(lines, line_index):
    """The last line above that starts at column 0 and begins a definition."""
    for i in range(line_index, -1, -1):
        line = lines[i]
        if line and not line[0].isspace() and not line.startswith(("}", "#", "namespace", "//")):
            return line
    return ""


def find_sites(rev):
    sites = []  # dicts: file, line, source, message, cuda
    for path in list_files(rev):
        text = read(rev, path)
        masked = mask(text)
        lines = text.split("\n")
        starts = []
        for m in re.finditer(r"\bthrow\b", masked):
            if re.match(r"throw\s*;", masked[m.start():]):
                continue  # a rethrow raises nothing new
            line_index = text.count("\n", 0, m.start())
            if HELPER_DEFINITIONS.search(enclosing_definition(lines, line_index)):
                continue  # the body of Layer::fail / fail_option: their callers are the sites
            starts.append(m.start())
        if path.startswith("layers/"):
            for m in CALL_SITE_HELPERS.finditer(masked):
                before = masked[:m.start()].rstrip()
                if before.endswith(("void", "]]")):
                    continue  # a declaration
                starts.append(m.start())
        for start in sorted(starts):
            line_start = text.rfind("\n", 0, start) + 1
            end = statement_end(masked, start)
            source = " ".join(text[line_start:end].split())
            sites.append({
                "file": path,
                "line": text.count("\n", 0, start) + 1,
                "source": source,
                "message": message(text[start:end]),
                "cuda": bool(CUDA_ONLY.search(path)),
            })
    return sites


def test_exists(rev, test_file, test_name):
    suite, _, name = test_name.partition(".")
    try:
        text = read(rev, test_file)
    except (OSError, subprocess.CalledProcessError):
        return False
    pattern = r"\bTEST(_F|_P)?\s*\(\s*" + re.escape(suite) + r"\s*,\s*" + re.escape(name) + r"\s*\)"
    return re.search(pattern, text) is not None


def apply_table(sites, table_path, rev):
    errors = []
    with open(table_path, encoding="utf-8") as f:
        rows = f.read().split("\n")
    for number, row in enumerate(rows, 1):
        if not row.strip() or row.lstrip().startswith("#"):
            continue
        where = f"{table_path}:{number}"
        fields = [field.strip() for field in row.split("|")]
        if len(fields) != 3:
            errors.append(f"{where}: expected 'FILE | KEY | STATUS'")
            continue
        path, key, status = fields
        if key.startswith("^"):
            matches = [s for s in sites if s["file"] == path and s["source"].startswith(key[1:])]
        else:
            matches = [s for s in sites if s["file"] == path and key in s["source"]]
        if len(matches) != 1:
            errors.append(f"{where}: '{key}' matches {len(matches)} sites in {path}, not one")
            continue
        site = matches[0]
        if "status" in site:
            errors.append(f"{where}: {path}:{site['line']} is already named on line {site['row']}")
            continue
        kind, _, detail = status.partition(" ")
        if kind == "tested":
            test = detail.split()
            if len(test) != 2 or not test_exists(rev, test[0], test[1]):
                errors.append(f"{where}: no test '{detail}' (want TEST_FILE Suite.Name)")
                continue
        elif kind not in ("unreachable", "gpu") or not detail:
            errors.append(f"{where}: status must be 'tested TEST_FILE Suite.Name', 'unreachable WHY' or 'gpu WHY'")
            continue
        site["status"], site["detail"], site["row"] = kind, detail.strip(), number
    return errors


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rev", help="read the sources and tests at this git revision")
    parser.add_argument("--table", default=os.path.join(REPO, "tools", "throw_sites_tested.txt"))
    parser.add_argument("--untested", action="store_true", help="list only the untested CPU sites")
    parser.add_argument("--check", action="store_true",
                        help="also exit 1 if a CPU site is untested (CTest runs this: a new error needs a test)")
    args = parser.parse_args()

    sites = find_sites(args.rev)
    errors = apply_table(sites, args.table, args.rev)
    for s in sites:
        if s["cuda"] and "status" in s:
            errors.append(f"{args.table}:{s['row']}: {s['file']}:{s['line']} is in a CUDA-only file; leave it out")
    gpu = [s for s in sites if s.get("status") == "gpu"]
    cuda = [s for s in sites if s["cuda"]]
    cpu = [s for s in sites if not s["cuda"] and s.get("status") != "gpu"]

    def show(s, status):
        print(f"{s['file']}:{s['line']}: [{status}] {s['message']}")

    for s in cpu:
        status = s.get("status", "untested")
        if args.untested and status != "untested":
            continue
        show(s, status + (f": {s['detail']}" if status != "untested" else ""))
    if not args.untested:
        print("\nReachable only with a usable GPU (not counted):")
        for s in gpu:
            show(s, "gpu: " + s["detail"])
        print("\nIn CUDA-only files (not counted):")
        for s in cuda:
            show(s, "cuda")

    tested = sum(s.get("status") == "tested" for s in cpu)
    unreachable = sum(s.get("status") == "unreachable" for s in cpu)
    untested = len(cpu) - tested - unreachable
    print(f"\nCPU sites: {len(cpu)}; tested {tested}, unreachable {unreachable}, untested {untested}. "
          f"Not counted: {len(gpu)} GPU-only in CPU files, {len(cuda)} in CUDA-only files.")
    if args.check and untested:
        errors.append(f"{untested} CPU throw site(s) without a test that checks the message: write one, name it "
                      f"in {os.path.relpath(args.table, REPO)} (see --untested)")
    for e in errors:
        print("error: " + e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
