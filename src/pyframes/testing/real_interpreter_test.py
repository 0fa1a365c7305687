# SPDX-License-Identifier: Apache-2.0
"""Checks the frame reader against a real CPython: run with the interpreter under test.

    python3.X real_interpreter_test.py <path to libpyframes_ctypes_probe.so>

The probe is called through ctypes, which releases the GIL around the call, and reads the
calling thread's frames from memory; every check compares them, frame by frame (function, file,
line), with what sys._getframe() reports at the same call. Exit status 0 when all pass.
"""
import asyncio
import ctypes
import sys
import threading

LIB = ctypes.CDLL(sys.argv[1])
LIB.ws_read_frames.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int,
                               ctypes.POINTER(ctypes.c_int)]
QUALNAME = sys.version_info >= (3, 11)  # co_qualname exists from 3.11
MAX_FRAMES = 512
LAMBDA = "main.<locals>.<lambda>" if QUALNAME else "<lambda>"
failures = []


def snapshot():
    """The caller's frames as the interpreter sees them, innermost first."""
    out = []
    f = sys._getframe(1)
    while f is not None:
        code = f.f_code
        out.append((code.co_qualname if QUALNAME else code.co_name, code.co_filename,
                    f.f_lineno or 0))
        f = f.f_back
    return out


def read(mode=0):
    """(frames read by the probe, frames by sys._getframe) at the same line of this function."""
    buf = ctypes.create_string_buffer(1 << 20)
    stats = (ctypes.c_int * 5)()
    expected, n = snapshot(), LIB.ws_read_frames(mode, MAX_FRAMES, buf, len(buf), stats)
    if n < 0:
        raise SystemExit(f"probe error {n}")
    got = []
    for line in buf.value.decode("utf-8").splitlines():
        function, file, lineno = line.split("\t")
        got.append((function, file, int(lineno)))
    if stats[0] != 0:
        failures.append(f"{stats[0]} frames skipped")
    return got, expected


def check(name, got_expected, caller=None):
    """Compares the frames; `caller`: the function that called read() (frame 1)."""
    got, expected = got_expected
    if got != expected:
        lines = [f"{name}: frames differ"]
        for i in range(max(len(got), len(expected))):
            g = got[i] if i < len(got) else None
            e = expected[i] if i < len(expected) else None
            lines.append(f"  {'  ' if g == e else '!='} {i}: read {g} / interpreter {e}")
        failures.append("\n".join(lines))
    elif caller is not None and (len(got) < 2 or got[1][0] != caller):
        failures.append(f"{name}: read() called from {got[1:2]}, want {caller!r}")
    else:
        print(f"ok {name}: {len(got)} frames, {got[1] if len(got) > 1 else got[0]}")


def plain():
    return read()


def outer():
    def inner():
        return read()
    return inner()


class Model:
    def forward(self):
        return read()


def gen():
    yield read()


async def coro():
    await asyncio.sleep(0)
    return read()


def recurse(n):
    if n == 0:
        return read()
    return recurse(n - 1)


def fünf_ünïcode():
    return read()


def main():
    print(f"CPython {sys.version.split()[0]}; GIL held inside the call: {LIB.ws_gil_held()}")
    major, minor = ctypes.c_int(), ctypes.c_int()
    status = LIB.ws_detected_version(ctypes.byref(major), ctypes.byref(minor))
    if (major.value, minor.value) != sys.version_info[:2] or status != 1:
        failures.append(f"detected {major.value}.{minor.value} status {status}")
    if LIB.ws_gil_held() != 0:
        failures.append("the GIL was held inside the ctypes call")
    check("module level", read())
    check("function", plain(), "plain")
    check("function, process_vm_readv", (lambda: read(1))(), LAMBDA)
    check("nested function", outer(),
          "outer.<locals>.inner" if QUALNAME else "inner")
    check("method", Model().forward(), "Model.forward" if QUALNAME else "forward")
    check("generator", next(gen()), "gen")
    check("coroutine under asyncio", asyncio.run(coro()), "coro")
    check("depth 200", recurse(200), "recurse")
    check("non-ASCII name", fünf_ünïcode(), "fünf_ünïcode")
    check("lambda", (lambda: read())(), LAMBDA)
    check("repeated site (cache)", [plain() for _ in range(3)][-1], "plain")
    result = {}
    t = threading.Thread(target=lambda: result.setdefault("r", plain()))
    t.start()
    t.join()
    check("another Python thread", result["r"], "plain")
    n = LIB.ws_frames_on_new_thread()
    if n != 0:
        failures.append(f"a thread that never ran Python read {n} frames")
    else:
        print("ok thread that never ran Python: 0 frames")
    if failures:
        print("FAILED:\n" + "\n".join(failures))
        return 1
    print("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
