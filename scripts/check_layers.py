#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Fails when an #include crosses a layer the wrong way.

The rules are the table in docs/design/layers.md (between the "layers:begin" and "layers:end"
markers): for each folder under src/, the folders its product code may include. A file belongs
to the longest folder in the table that contains it. Test code (*_test.cc, *_fuzzer.cc,
*_bench.cc and testing/ folders) may also include the testing/ folders of what it may include,
base/testing/, and the helpers under test/.

Usage: check_layers.py [REPO_ROOT]   (prints every violation; exit status 1 when there is one)
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|\s*(.*?)\s*\|\s*(.*?)\s*\|\s*$")


def read_rules(doc_path):
    """{folder: set of folders it may include}, from the table in the layers document."""
    text = open(doc_path, encoding="utf-8").read()
    begin = text.find("<!-- layers:begin -->")
    end = text.find("<!-- layers:end -->")
    if begin < 0 or end < begin:
        sys.exit(f"{doc_path}: no <!-- layers:begin --> ... <!-- layers:end --> table")
    rules = {}
    for line in text[begin:end].splitlines():
        m = ROW.match(line)
        if not m or m.group(1) == "folder":
            continue
        allowed = set(re.findall(r"`([^`]+)`", m.group(2)))
        rules[m.group(1).rstrip("/")] = allowed
    if not rules:
        sys.exit(f"{doc_path}: the layers table has no rows")
    return rules


def owner(path, rules):
    """The longest folder of the table that holds `path` (relative to src/), or None."""
    best = None
    for folder in rules:
        if path == folder or path.startswith(folder + "/"):
            if best is None or len(folder) > len(best):
                best = folder
    return best


def is_test(path):
    name = os.path.basename(path)
    return (name.endswith(("_test.cc", "_fuzzer.cc", "_bench.cc"))
            or "/testing/" in "/" + path)


def allowed(src_folder, target_folder, target_path, test, rules):
    if target_folder == src_folder:
        return True
    deps = rules[src_folder]
    in_testing = "/testing/" in "/" + target_path
    if target_folder in deps:
        # A product file never reaches into another folder's test doubles.
        return test or not in_testing
    # Files listed by path (e.g. `agent/sources/source.h`) are allowed on their own, and tests
    # may use the test doubles next to them (`agent/sources/testing/`).
    if target_path in deps:
        return True
    # Every test may use base's test helpers (TempDir, peers, the fake task runner).
    if test and target_path.startswith("base/testing/"):
        return True
    if test and in_testing:
        folder = target_path[:target_path.index("/testing/")] if "/testing/" in target_path \
            else target_path.rsplit("/", 1)[0]
        return any(d.rsplit("/", 1)[0] == folder for d in deps if d.endswith(".h"))
    return False


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), ".."))
    rules = read_rules(os.path.join(root, "docs", "design", "layers.md"))
    src = os.path.join(root, "src")
    test_root = os.path.join(root, "test")
    problems = []
    for dirpath, _, files in os.walk(src):
        for name in sorted(files):
            if not name.endswith((".h", ".cc")):
                continue
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, src)
            folder = owner(rel, rules)
            if folder is None:
                problems.append(f"src/{rel}: its folder has no row in docs/design/layers.md; "
                                "add one saying what it may include")
                continue
            test = is_test(rel)
            text = open(full, encoding="utf-8", errors="replace").read()
            for m in INCLUDE.finditer(text):
                inc = m.group(1)
                if not os.path.exists(os.path.join(src, inc)):
                    if test and os.path.exists(os.path.join(test_root, inc)):
                        continue  # test helpers (integration/, fuzz/)
                    continue  # generated headers (protobuf, web assets) and system paths
                target = owner(inc, rules)
                if target is None:
                    problems.append(f"src/{rel}: includes {inc}, whose folder has no row in "
                                    "docs/design/layers.md")
                    continue
                if not allowed(folder, target, inc, test, rules):
                    line = text.count("\n", 0, m.start()) + 1
                    problems.append(
                        f"src/{rel}:{line}: includes {inc}, but {folder}/ may include only "
                        f"{', '.join(sorted(rules[folder])) or 'itself'} "
                        "(docs/design/layers.md): move the code to the lower layer or "
                        "depend on an interface there")
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} include(s) cross a layer the wrong way")
        return 1
    print(f"layers: {len(rules)} folders checked, no include crosses a layer the wrong way")
    return 0


if __name__ == "__main__":
    sys.exit(main())
