# SPDX-License-Identifier: Apache-2.0
# A Python program that burns CPU in known functions in designed proportions, for the CPU
# profiler's end-to-end test: common() calls heavy() and light(), and heavy() loops twice as
# long, so of the time under common() about 2/3 is in heavy and 1/3 in light.
# Usage: cpu_python_child.py SECONDS
import sys
import time

UNIT = 20000


def heavy():
    x = 0
    for i in range(2 * UNIT):
        x += i * i
    return x


def light():
    x = 0
    for i in range(UNIT):
        x += i * i
    return x


def common():
    return heavy() + light()


def main(seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        common()


main(float(sys.argv[1]))
