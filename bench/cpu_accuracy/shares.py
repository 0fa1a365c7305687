#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Per-function CPU shares from warpscope's folded profiles and from `perf script`, side by side
with the designed shares (bench/cpu_profiler_accuracy.sh).

    shares.py --design leaf_a=50s,stage_x=65i,... [--warpscope A.folded ...] [--perf perf.txt]
                        [--python]

A design entry is NAME=PERCENT followed by `s` (self: the function is the deepest frame of the
sample among the designed ones) or `i` (inclusive: the function is anywhere on the stack). Every
sample is weighted by its CPU time (warpscope's cpu/nanoseconds values, perf's period). Prints a
table and, last, "max_diff_vs_perf <pp>" and "max_diff_vs_design <pp>"; exits 3 when no sample
holds a designed function (with --python: no Python frames in the profile).
"""
import argparse
import re
import sys

PY_FRAME = re.compile(r"^(.*) \(([^():]+\.py)(:\d+)?\)$")


def read_folded(paths, python):
    """(stack, weight) pairs, root first; Python frames reduced to their function name."""
    stacks = []
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.rstrip("\n")
                stack, _, weight = line.rpartition(" ")
                if not stack or not weight.isdigit():
                    continue
                frames = stack.split(";")
                if python:
                    frames = [m.group(1) for m in map(PY_FRAME.match, frames) if m]
                stacks.append((frames, int(weight)))
    return stacks


def read_perf_script(path):
    """`perf script -F tid,period,ip,sym,dso` blocks (leaf first) → (stack root first, period)."""
    stacks = []
    with open(path, encoding="utf-8", errors="replace") as f:
        block = []
        for line in list(f) + [""]:
            if line.strip():
                block.append(line.rstrip("\n"))
                continue
            if block:
                header = block[0].split()
                period = int(header[1]) if len(header) > 1 and header[1].isdigit() else 1
                frames = []
                for frame in block[1:]:
                    parts = frame.split(None, 1)
                    if len(parts) == 2:
                        frames.append(parts[1].rsplit(" (", 1)[0])
                stacks.append((list(reversed(frames)), period))
                block = []
    return stacks


def shares(stacks, design):
    names = set(design)
    total = sum(w for _, w in stacks)
    out = {name: 0 for name in design}
    matched = 0
    for frames, w in stacks:
        deepest = next((f for f in reversed(frames) if f in names), None)
        if deepest is None:
            continue
        matched += w
        for name, (_, kind) in design.items():
            if (kind == "s" and name == deepest) or (kind == "i" and name in frames):
                out[name] += w
    if total == 0:
        return None, 0, 0
    return {k: 100.0 * v / total for k, v in out.items()}, matched / total, total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--design", required=True)
    ap.add_argument("--warpscope", nargs="*", default=[])
    ap.add_argument("--perf")
    ap.add_argument("--python", action="store_true")
    args = ap.parse_args()
    design = {}
    for entry in args.design.split(","):
        name, _, value = entry.partition("=")
        design[name] = (float(value[:-1]), value[-1])

    ws_stacks = read_folded(args.warpscope, args.python)
    ws, ws_matched, ws_ns = shares(ws_stacks, design)
    pf, pf_matched, pf_ns = None, 0, 0
    if args.perf:
        pf, pf_matched, pf_ns = shares(read_perf_script(args.perf), design)
    if ws is None or ws_matched == 0:
        print("warpscope: no sample holds a designed function")
        return 3

    header = f"{'function':<12} {'kind':<9} {'designed':>8} {'warpscope':>9}"
    if pf is not None:
        header += f" {'perf':>7} {'ws-perf':>8}"
    header += f" {'ws-design':>9}"
    print(header)
    max_perf = max_design = 0.0
    for name, (designed, kind) in design.items():
        kind_name = "self" if kind == "s" else "inclusive"
        row = f"{name:<12} {kind_name:<9} {designed:>7.1f}% {ws[name]:>8.1f}%"
        if pf is not None:
            d = ws[name] - pf[name]
            max_perf = max(max_perf, abs(d))
            row += f" {pf[name]:>6.1f}% {d:>+7.1f}"
        dd = ws[name] - designed
        max_design = max(max_design, abs(dd))
        row += f" {dd:>+8.1f}"
        print(row)
    sampled = (f"CPU time sampled: warpscope {ws_ns / 1e9:.1f} s ({len(ws_stacks)} distinct "
               f"stacks, {100 * ws_matched:.1f}% in designed functions)")
    if pf is not None:
        sampled += f", perf {pf_ns / 1e9:.1f} s ({100 * pf_matched:.1f}%)"
    print(sampled)
    if pf is not None:
        print(f"max_diff_vs_perf {max_perf:.1f}")
    print(f"max_diff_vs_design {max_design:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
