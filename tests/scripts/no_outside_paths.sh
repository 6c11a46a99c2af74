#!/usr/bin/env bash
# no_outside_paths.sh — a clone explains itself: no tracked file names a path of the machine
# it was written on, and the layout documents name files that exist.  Fails naming each
# offending file:line.  Run from anywhere.
#
# The rule, for every file `git ls-files` lists:
#   - never a home or work folder of a machine (the folders work, root, home, Users at the
#     root of the file system; the pattern below spells them so this line is no match);
#   - /tmp/ only as the start of a scratch name a program makes at run time and removes,
#     spelled /tmp/fleet... (mktemp templates, per-pid files); nothing recorded from a
#     build (bench/profiles write paths relative to the checkout); and Ray's temp folder
#     inside a Ray pod (the rendered History Server collector shares it);
#   - the one folder outside the checkout the project uses is `shared`, the checkout's
#     sibling (KubeRay CRDs, test vectors, tools/validate-manifest).  It is reached only
#     relative to the repository: ../shared from the root ($root/../shared,
#     FLEETD_SOURCE_DIR "/../shared", $(pwd)/../shared), or ../../../shared from a file
#     two folders down (cloudsim/fleets/test.json).  Any other ../ that climbs out of the
#     repository is not checked here (it would be a broken relative path, caught by the
#     code using it).
# Then every path written in backticks in CONTRIBUTING.md and docs/design/*.md (a word with
# a / or a file extension; <placeholders> and NNNN are skipped, * globs must match) names a
# tracked file or folder: at the root, or as the tail of a tracked path (`job.c`,
# `harness/`), since those documents name files relative to the folder they describe.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
self=tests/scripts/no_outside_paths.sh
bad=0

list=$(mktemp)
trap 'rm -f "$list"' EXIT
git ls-files | grep -vxF "$self" >"$list"
docs=(CONTRIBUTING.md)
for f in docs/design/*.md; do [ -e "$f" ] && docs+=("$f"); done
python3 - "$list" "${docs[@]}" <<'PY' || bad=1
import fnmatch, re, sys
tracked = [t for t in open(sys.argv[1]).read().split("\n") if t]
bad = 0

# 1. absolute paths of the machine (patterns split so this file's text is not a hit)
home = re.compile("/(wor" "k|roo" "t|hom" "e|User" "s)/")
# ray: Ray's own temp folder inside a Ray pod (RAY_TMP_ROOT of the History Server collector,
# providers/kuberay_history.c), a path of the container, not of this machine
tmp = re.compile("/tm" "p/(?!fleet|ray\\b)")
for path in tracked:
    try:
        text = open(path, encoding="utf-8").read()
    except (UnicodeDecodeError, IsADirectoryError, FileNotFoundError):
        continue	# binary, a submodule, or deleted in the work tree
    for n, line in enumerate(text.split("\n"), 1):
        if home.search(line) or tmp.search(line):
            print(f"no_outside_paths: {path}:{n}: names a path outside the repository: "
                  f"{line.strip()[:120]}")
            bad = 1

# 2. paths in backticks in the layout documents exist
every = set(tracked)
for t in tracked:
    parts = t.split("/")
    every.update("/".join(parts[:i]) for i in range(1, len(parts)))
every.add(sys.argv[0])
exts = (".c", ".h", ".sh", ".json", ".md", ".sql", ".py", ".yaml", ".js", ".txt", ".tf", ".def")
tops = {t.split("/")[0] for t in tracked}

def exists(word):
    w = word.rstrip("/")
    return any(fnmatch.fnmatchcase(p, w) or fnmatch.fnmatchcase(p, "*/" + w) for p in every)

for doc in sys.argv[2:]:
    for n, line in enumerate(open(doc, encoding="utf-8"), 1):
        for span in re.findall(r"`([^`]+)`", line):
            for word in span.split():
                word = word.strip(",;:()")
                if not re.fullmatch(r"[A-Za-z0-9_.*/-]+", word) or "NNNN" in word:
                    continue
                if word.startswith(("/", "-", ".")):
                    continue
                if not (word.endswith("/") or word.endswith(exts) or
                        ("/" in word and word.split("/")[0] in tops)):
                    continue
                if not exists(word):
                    print(f"no_outside_paths: {doc}:{n}: `{word}` names no file of the repository")
                    bad = 1
sys.exit(bad)
PY

[ "$bad" -eq 0 ] && echo "no_outside_paths: no path outside the repository; every path in the layout documents exists"
exit "$bad"
