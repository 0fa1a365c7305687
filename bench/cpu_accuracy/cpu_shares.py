# SPDX-License-Identifier: Apache-2.0
"""The Python workload of bench/cpu_profiler_accuracy.sh: CPU in four leaf functions in the
designed proportions 50/30/15/5 %, a few calls deep (as cpu_shares.c):

    run_units → work_unit → stage_x → inner_x → leaf_a   50 %
                                                → stage_x → leaf_c             15 %
                                                → stage_y → leaf_b             30 %
                                                → leaf_d                        5 %

Every leaf runs the same loop, so its time is proportional to its iteration count.
`python3 cpu_shares.py SECONDS` prints "ready" and burns one CPU.
"""
import sys
import time

STEP = 400  # iterations per work unit and percentage point


def leaf_a(n):
    x = 1
    for _ in range(50 * n):
        x = (x * 1103515245 + 12345) & 0xFFFFFFFF
    return x


def leaf_b(n):
    x = 2
    for _ in range(30 * n):
        x = (x * 1103515245 + 12345) & 0xFFFFFFFF
    return x


def leaf_c(n):
    x = 3
    for _ in range(15 * n):
        x = (x * 1103515245 + 12345) & 0xFFFFFFFF
    return x


def leaf_d(n):
    x = 4
    for _ in range(5 * n):
        x = (x * 1103515245 + 12345) & 0xFFFFFFFF
    return x


def inner_x(n):
    return leaf_a(n) + 1


def stage_x(n):
    return inner_x(n) ^ leaf_c(n)


def stage_y(n):
    return leaf_b(n) * 3


def work_unit(n):
    return stage_x(n) ^ stage_y(n) ^ leaf_d(n)


def run_units(seconds):
    end = time.monotonic() + seconds
    sink = 0
    while time.monotonic() < end:
        sink ^= work_unit(STEP)
    return sink


if __name__ == "__main__":
    print("ready", flush=True)
    run_units(float(sys.argv[1]) if len(sys.argv) > 1 else 10.0)
