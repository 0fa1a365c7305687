# SPDX-License-Identifier: Apache-2.0
# The Python program remote_real_test.cc reads from outside: the main thread runs
# <module> -> outer -> (map, a C call back into Python) -> middle -> inner and blocks reading
# stdin; a second thread runs worker -> w_inner and blocks on an Event. Prints
# "ready <main tid> <worker tid>" first. The test finds the expected lines by the "LINE:" marks.
# Ends when its stdin is closed; the line "exec" makes it exec itself (same pid, new image).
import os
import sys
import threading

started = threading.Event()
worker_tid = []


def w_inner(stop):
    worker_tid.append(threading.get_native_id())
    started.set()
    stop.wait()  # LINE:w_inner


def worker(stop):
    w_inner(stop)  # LINE:worker


def inner():
    print(f"ready {threading.get_native_id()} {worker_tid[0]}", flush=True)
    line = sys.stdin.readline()  # LINE:inner
    if line == "exec\n":
        os.execv(sys.executable, [sys.executable, "-X", "utf8", __file__])


def middle(_):
    inner()  # LINE:middle


def outer():
    list(map(middle, [0]))  # LINE:outer


stop = threading.Event()
thread = threading.Thread(target=worker, args=(stop,), daemon=True)
thread.start()
started.wait()
outer()  # LINE:module
stop.set()
