"""SHA-256 of many short messages at once, compiled with numba, for the Merkle tree.

A block's tree is three million SHA-256 compressions (a leaf is two, a node two, half as many
nodes as leaves); ``hashlib`` would spend most of its time in Python calls. Two compressions:

- ``_compress_ni``: the x86 SHA extensions (``sha256rnds2``, ``sha256msg1``, ``sha256msg2``),
  emitted as LLVM intrinsics, for CPUs that have them (AMD since Zen, Intel since Ice Lake);
- ``_compress_portable``: FIPS 180-4 in plain integer arithmetic, for any CPU.

The SHA instructions have only a legacy SSE encoding: Intel CPUs run them with a penalty after
AVX code has left the upper halves of the vector registers dirty, so ``_compress_ni`` starts
with ``vzeroupper`` where the CPU has AVX. :func:`fastest` still times both once per process
and the faster one is used (``docs/performance.md`` has the figures).

The kernels release the GIL and work on a range of rows, so the caller splits the rows between
threads. ``hashlib`` checks both compressions in the tests.
"""

from __future__ import annotations

import functools
import importlib
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final, cast

import numba
import numpy as np
from numba.core import cgutils, config
from numba.extending import intrinsic
from numpy.typing import NDArray

# llvmlite (numba's LLVM binding) has no type information.
ir: Any = importlib.import_module("llvmlite.ir")
_llvm: Any = importlib.import_module("llvmlite.binding")
_function: Any = cgutils.get_or_insert_function

_K: Final = (
    0x428A2F98, 0x71374491, 0xB5C0FBCF, 0xE9B5DBA5, 0x3956C25B, 0x59F111F1, 0x923F82A4,
    0xAB1C5ED5, 0xD807AA98, 0x12835B01, 0x243185BE, 0x550C7DC3, 0x72BE5D74, 0x80DEB1FE,
    0x9BDC06A7, 0xC19BF174, 0xE49B69C1, 0xEFBE4786, 0x0FC19DC6, 0x240CA1CC, 0x2DE92C6F,
    0x4A7484AA, 0x5CB0A9DC, 0x76F988DA, 0x983E5152, 0xA831C66D, 0xB00327C8, 0xBF597FC7,
    0xC6E00BF3, 0xD5A79147, 0x06CA6351, 0x14292967, 0x27B70A85, 0x2E1B2138, 0x4D2C6DFC,
    0x53380D13, 0x650A7354, 0x766A0ABB, 0x81C2C92E, 0x92722C85, 0xA2BFE8A1, 0xA81A664B,
    0xC24B8B70, 0xC76C51A3, 0xD192E819, 0xD6990624, 0xF40E3585, 0x106AA070, 0x19A4C116,
    0x1E376C08, 0x2748774C, 0x34B0BCB5, 0x391C0CB3, 0x4ED8AA4A, 0x5B9CCA4F, 0x682E6FF3,
    0x748F82EE, 0x78A5636F, 0x84C87814, 0x8CC70208, 0x90BEFFFA, 0xA4506CEB, 0xBEF9A3F7,
    0xC67178F2,
)  # fmt: skip
K_ARRAY: Final = np.array(_K, dtype=np.uint32)
H0: Final = np.array(
    [0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A, 0x510E527F, 0x9B05688C, 0x1F83D9AB,
     0x5BE0CD19],
    dtype=np.uint32,
)  # fmt: skip

_I32 = ir.IntType(32)
_V4 = ir.VectorType(_I32, 4)
_V16 = ir.VectorType(ir.IntType(8), 16)
_VOID = ir.FunctionType(ir.VoidType(), [])


def _vector(values: list[int]) -> ir.Constant:
    return ir.Constant(ir.VectorType(_I32, len(values)), [ir.Constant(_I32, v) for v in values])


def _compiles_for(feature: str) -> bool:
    """Whether numba compiles for a CPU with ``feature`` (an LLVM name: "sha", "avx")."""
    settings: Any = config
    if settings.CPU_NAME is not None:  # compiling for a named CPU: its features, not the host's
        return f"+{feature}" in (settings.CPU_FEATURES or "")
    return bool(_llvm.get_host_cpu_features().get(feature, False))


def has_sha_extensions() -> bool:
    """Whether numba compiles for a CPU with the x86 SHA extensions."""
    return _compiles_for("sha")


@intrinsic
def _sha_rounds(typingctx: Any, state: Any, data: Any, offset: Any) -> Any:
    """``state`` (8,) uint32 ← SHA-256 compression of ``data[offset:offset + 64]`` (uint8).

    The SHA extensions keep the eight working words as ABEF and CDGH; the message words are
    big-endian, so each 32-bit lane is byte-swapped on load.
    """
    del typingctx
    signature = numba.types.void(state, data, offset)

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        module = builder.module
        rnds2 = _function(module, ir.FunctionType(_V4, [_V4, _V4, _V4]), "llvm.x86.sha256rnds2")
        msg1 = _function(module, ir.FunctionType(_V4, [_V4, _V4]), "llvm.x86.sha256msg1")
        msg2 = _function(module, ir.FunctionType(_V4, [_V4, _V4]), "llvm.x86.sha256msg2")
        if _compiles_for("avx"):
            # The SHA instructions exist only in legacy SSE encoding; after AVX code has left
            # the upper register halves dirty, Intel CPUs run them with a penalty.
            builder.call(_function(module, _VOID, "llvm.x86.avx.vzeroupper"), [])
        state_ptr = context.make_array(sig.args[0])(context, builder, args[0]).data
        data_ptr = context.make_array(sig.args[1])(context, builder, args[1]).data
        words = builder.bitcast(state_ptr, _V4.as_pointer())
        abcd = builder.load(words, align=4)
        efgh = builder.load(builder.gep(words, [ir.Constant(_I32, 1)]), align=4)
        s0 = builder.shuffle_vector(abcd, efgh, _vector([5, 4, 1, 0]))  # F E B A
        s1 = builder.shuffle_vector(abcd, efgh, _vector([7, 6, 3, 2]))  # H G D C
        start0, start1 = s0, s1
        block = builder.bitcast(builder.gep(data_ptr, [args[2]]), _V16.as_pointer())
        swap = _vector([3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12])
        w = []
        for q in range(4):
            raw = builder.load(builder.gep(block, [ir.Constant(_I32, q)]), align=1)
            w.append(builder.bitcast(builder.shuffle_vector(raw, raw, swap), _V4))
        for r in range(16):
            if r >= 4:  # W[t..t+3] from W[t-16..t-1]
                x = builder.call(msg1, [w[r - 4], w[r - 3]])
                w7 = builder.shuffle_vector(w[r - 2], w[r - 1], _vector([1, 2, 3, 4]))
                x = builder.add(x, w7)
                w.append(builder.call(msg2, [x, w[r - 1]]))
            m = builder.add(w[r], _vector(list(_K[4 * r : 4 * r + 4])))
            s1 = builder.call(rnds2, [s1, s0, m])
            m = builder.shuffle_vector(m, m, _vector([2, 3, 0, 0]))
            s0 = builder.call(rnds2, [s0, s1, m])
        s0 = builder.add(s0, start0)
        s1 = builder.add(s1, start1)
        builder.store(builder.shuffle_vector(s0, s1, _vector([3, 2, 7, 6])), words, align=4)
        builder.store(
            builder.shuffle_vector(s0, s1, _vector([1, 0, 5, 4])),
            builder.gep(words, [ir.Constant(_I32, 1)]),
            align=4,
        )
        return context.get_dummy_value()

    return signature, codegen


_M32: Final = 0xFFFFFFFF


def _rotr(x: Any, n: int) -> Any:
    return ((x >> n) | (x << (32 - n))) & _M32


def _compress_portable(state: Any, data: Any, offset: int) -> None:
    """The same as ``_compress_ni``, in plain integer arithmetic (FIPS 180-4 §6.2.2): 32-bit
    words held in int64 and masked after each sum (numba widens uint32 arithmetic)."""
    w = np.empty(64, dtype=np.int64)
    for t in range(16):
        o = offset + 4 * t
        w[t] = (
            (np.int64(data[o]) << 24)
            | (np.int64(data[o + 1]) << 16)
            | (np.int64(data[o + 2]) << 8)
            | np.int64(data[o + 3])
        )
    for t in range(16, 64):
        x = w[t - 15]
        y = w[t - 2]
        s0 = _rotr(x, 7) ^ _rotr(x, 18) ^ (x >> 3)
        s1 = _rotr(y, 17) ^ _rotr(y, 19) ^ (y >> 10)
        w[t] = (w[t - 16] + s0 + w[t - 7] + s1) & _M32
    a, b, c, d = np.int64(state[0]), np.int64(state[1]), np.int64(state[2]), np.int64(state[3])
    e, f, g, h = np.int64(state[4]), np.int64(state[5]), np.int64(state[6]), np.int64(state[7])
    for t in range(64):
        s1 = _rotr(e, 6) ^ _rotr(e, 11) ^ _rotr(e, 25)
        ch = (e & f) ^ (~e & g)
        t1 = (h + s1 + ch + np.int64(K_ARRAY[t]) + w[t]) & _M32
        s0 = _rotr(a, 2) ^ _rotr(a, 13) ^ _rotr(a, 22)
        maj = (a & b) ^ (a & c) ^ (b & c)
        h, g, f, e = g, f, e, (d + t1) & _M32
        d, c, b, a = c, b, a, (t1 + s0 + maj) & _M32
    for j, v in enumerate((a, b, c, d, e, f, g, h)):
        state[j] = np.uint32((np.int64(state[j]) + v) & _M32)


def _digest(state: Any, out: Any, i: int) -> None:
    for j in range(8):
        v = state[j]
        out[i, 4 * j] = (v >> np.uint32(24)) & np.uint32(0xFF)
        out[i, 4 * j + 1] = (v >> np.uint32(16)) & np.uint32(0xFF)
        out[i, 4 * j + 2] = (v >> np.uint32(8)) & np.uint32(0xFF)
        out[i, 4 * j + 3] = v & np.uint32(0xFF)


def _pad(buf: Any, length: int) -> None:
    """Padding of a ``length``-byte message (64 < length < 120) in a 128-byte buffer."""
    for j in range(length, 128):
        buf[j] = 0
    buf[length] = 0x80
    bits = 8 * length
    buf[126] = (bits >> 8) & 0xFF
    buf[127] = bits & 0xFF


def _hash_batch(  # noqa: PLR0917  (numba takes no keyword-only arguments)
    buf: Any, state: Any, out: Any, first: int, count: int, ni: bool
) -> None:
    """out[first + b] = SHA-256 of the padded two-block message buf[b], for b < count."""
    for b in range(count):
        state[:] = H0
        if ni:  # a constant where it is compiled: numba keeps only one branch
            _compress_ni(state, buf[b], 0)
            _compress_ni(state, buf[b], 64)
        else:
            _compress_portable(state, buf[b], 0)
            _compress_portable(state, buf[b], 64)
        _digest(state, out, first + b)


Kernels = dict[str, Callable[..., None]]


def _make_kernels(ni: bool) -> Kernels:
    """The row kernels around one compression (``ni``: the SHA extensions, else portable);
    each hashes rows ``start..stop``.

    ``ni`` is a plain bool in the closures, so numba's on-disk cache finds them again in a
    fresh process (a compiled function in the closure would change the cache key each time).
    Messages are built _BATCH at a time, then hashed: the compression reads 16 bytes at once,
    and reading bytes just written one by one would stall on each load.
    """

    def rows(messages: Any, out: Any, start: int, stop: int) -> None:
        """out[i] = SHA-256(messages[i]), messages (n, m) uint8, 64 ≤ m < 120."""
        m = messages.shape[1]
        buf = np.empty((_BATCH, 128), dtype=np.uint8)
        state = np.empty(8, dtype=np.uint32)
        for b in range(_BATCH):
            _pad(buf[b], m)
        for first in range(start, stop, _BATCH):
            count = min(_BATCH, stop - first)
            for b in range(count):
                for j in range(m):
                    buf[b, j] = messages[first + b, j]
            _hash_batch(buf, state, out, first, count, ni)

    def leaves(tickets: Any, lots: Any, out: Any, start: int, stop: int) -> None:
        """out[i] = SHA-256(0x00 ‖ serial i + 1 u32 BE ‖ tickets[i] (67) ‖ lots[i] u64 BE)."""
        buf = np.empty((_BATCH, 128), dtype=np.uint8)
        state = np.empty(8, dtype=np.uint32)
        for b in range(_BATCH):
            _pad(buf[b], 80)
            buf[b, 0] = 0x00
        for first in range(start, stop, _BATCH):
            count = min(_BATCH, stop - first)
            for b in range(count):
                i = first + b
                serial = i + 1
                for j in range(4):
                    buf[b, 1 + j] = (serial >> (24 - 8 * j)) & 0xFF
                for j in range(67):
                    buf[b, 5 + j] = tickets[i, j]
                lot = lots[i]
                for j in range(8):
                    buf[b, 72 + j] = (lot >> (56 - 8 * j)) & 0xFF
            _hash_batch(buf, state, out, first, count, ni)

    def parents(level: Any, out: Any, start: int, stop: int) -> None:
        """out[i] = SHA-256(0x01 ‖ level[2i] ‖ level[2i + 1])."""
        buf = np.empty((_BATCH, 128), dtype=np.uint8)
        state = np.empty(8, dtype=np.uint32)
        for b in range(_BATCH):
            _pad(buf[b], 65)
            buf[b, 0] = 0x01
        for first in range(start, stop, _BATCH):
            count = min(_BATCH, stop - first)
            for b in range(count):
                i = first + b
                for j in range(32):
                    buf[b, 1 + j] = level[2 * i, j]
                    buf[b, 33 + j] = level[2 * i + 1, j]
            _hash_batch(buf, state, out, first, count, ni)

    jit = numba.njit(cache=True, nogil=True)
    return {"rows": jit(rows), "leaves": jit(leaves), "parents": jit(parents)}


_compress_ni = cast(Callable[..., None], _sha_rounds)  # called from compiled code only
_rotr = numba.njit(inline="always")(_rotr)
_compress_portable = numba.njit(inline="always")(_compress_portable)
_digest = numba.njit(inline="always")(_digest)
_pad = numba.njit(inline="always")(_pad)
_hash_batch = numba.njit(inline="always")(_hash_batch)
_BATCH: Final = 16
_THREADS: Final = max(1, min(4, os.cpu_count() or 1))
_PER_THREAD_MIN: Final = 4096  # rows below which one thread does it all
_TRIAL_ROWS: Final = 2048

PORTABLE: Final = _make_kernels(ni=False)
SHA_EXTENSIONS: Final = _make_kernels(ni=True) if has_sha_extensions() else None


def available() -> dict[str, Kernels]:
    """The kernels this CPU can run, by name: ``portable``, and ``sha-extensions`` where the
    CPU has them."""
    found = {"portable": PORTABLE}
    if SHA_EXTENSIONS is not None:
        found["sha-extensions"] = SHA_EXTENSIONS
    return found


def trial_seconds(kernels: Kernels, rows: int = _TRIAL_ROWS) -> float:
    """Best of three timings of ``rows`` leaf hashes with ``kernels`` on one thread (compiled
    or loaded from numba's cache first)."""
    tickets = np.full((rows, 67), ord("P"), dtype=np.uint8)
    lots = np.zeros(rows, dtype=np.int64)
    out = np.empty((rows, 32), dtype=np.uint8)
    kernels["leaves"](tickets, lots, out, 0, 16)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        kernels["leaves"](tickets, lots, out, 0, rows)
        best = min(best, time.perf_counter() - start)
    return best


@functools.cache
def fastest() -> tuple[str, Kernels]:
    """The name and kernels that hash fastest on this machine, timed once per process: the SHA
    extensions are faster than the portable code on some CPUs and slower on others
    (docs/performance.md)."""
    timed = {name: trial_seconds(kernels) for name, kernels in available().items()}
    name = min(timed, key=timed.__getitem__)
    return name, available()[name]


def run(kind: str, args: tuple[Any, ...], n: int, kernels: Kernels | None = None) -> None:
    """Run kernel ``kind`` (``rows``, ``leaves`` or ``parents``) over rows 0..n-1, split
    between threads."""
    kernel = (kernels or fastest()[1])[kind]
    parts = max(1, min(_THREADS, n // _PER_THREAD_MIN))
    bounds = [n * p // parts for p in range(parts + 1)]
    if parts == 1:
        kernel(*args, 0, n)
        return
    with ThreadPoolExecutor(max_workers=parts) as pool:
        for future in [pool.submit(kernel, *args, bounds[p], bounds[p + 1]) for p in range(parts)]:
            future.result()


def sha256_rows(messages: NDArray[np.uint8], kernels: Kernels | None = None) -> NDArray[np.uint8]:
    """(n, 32) uint8: SHA-256 of each row of ``messages`` ((n, m) uint8, 65 ≤ m ≤ 119)."""
    out = np.empty((messages.shape[0], 32), dtype=np.uint8)
    run("rows", (np.ascontiguousarray(messages), out), messages.shape[0], kernels)
    return out
