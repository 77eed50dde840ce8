"""What a CUDA kernel's ``.cu`` states: one ``SGEMM_REGISTER(symbol, BM, BN, BK, THREADS, FLAGS)``
line per function it launches, and for a launch that splits K across blocks one
``SGEMM_SPLIT_K(symbol, BLOCK_BYTES, INFLIGHT_BYTES, MAX_SPLITS, CHUNK_K)`` line (common.cuh), their
arguments evaluated through the file's ``#define``s (a small safe evaluator of integer constants,
not ``eval``). The registry (``study.kernels``) reads a CUDA
kernel's symbols, tiles, threads and operand needs from here, so they are written once: in the
``.cu``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from study.errors import InputError

REPO = Path(__file__).resolve().parents[2]


REGISTER_MACRO = "SGEMM_REGISTER"
SPLIT_MACRO = "SGEMM_SPLIT_K"
# the bits, #defined in common.cuh
FLAG_NAMES = ("SGEMM_VEC4", "SGEMM_Y_WALKS_N", "SGEMM_SM90", "SGEMM_BALANCED", "SGEMM_SM90A")

# comments out, string and character literals kept (a "//" inside a string is no comment)
_LEXEMES = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|//[^\n]*|/\*.*?\*/', re.S)
_STRING = re.compile(r'"(?:\\.|[^"\\\n])*"')
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)(\(?)(.*)$", re.M)
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)
_REGISTER = re.compile(rf"\b{REGISTER_MACRO}\b")
_SPLIT = re.compile(rf"\b{SPLIT_MACRO}\b")
_TOKEN = re.compile(r"\s*(?:(\d[\w.]*)|([A-Za-z_]\w*)|(\S))")  # number, name, other
_INT = re.compile(r"(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9]\d*)[uUlL]*")
_OPS = "+-*/%|()"


def _code(text: str) -> str:
    """``text`` as the preprocessor reads it: comments out, continuation lines joined."""
    text = _LEXEMES.sub(lambda m: m.group(0) if m.group(0)[0] in "\"'" else " ", text)
    return re.sub(r"\\\r?\n", " ", text)


def _tokens(expr: str, what: str) -> list[str]:
    out: list[str] = []
    for number, name, other in _TOKEN.findall(expr):
        if other and other not in _OPS:
            raise InputError(f"{what}: {expr.strip()!r} is not an integer expression (at {other!r})")
        out.append(number or name or other)
    if not out:
        raise InputError(f"{what}: empty expression")
    return out


def _int(tok: str, what: str) -> int:
    m = _INT.fullmatch(tok)
    if not m:
        raise InputError(f"{what}: {tok!r} is not an integer literal")
    digits = m.group(1)
    return int(digits, 16 if digits[:2] in ("0x", "0X") else 8 if digits[0] == "0" else 10)


def evaluate(expr: str, defines: Mapping[str, str], what: str = "expression") -> int:
    """The value of a C integer constant expression: integer literals, names from ``defines``
    (name -> replacement text of an object-like ``#define``, evaluated in turn), ``+ - * / %``,
    ``|``, unary ``-``/``+`` and parentheses, with C's precedence; ``/`` and ``%`` truncate toward
    zero as in C. Anything else is an InputError that starts with ``what``; nothing reaches
    ``eval``."""

    def value(text: str, stack: tuple[str, ...]) -> int:
        toks = _tokens(text, what)
        pos = 0

        def peek() -> str | None:
            return toks[pos] if pos < len(toks) else None

        def take() -> str:
            nonlocal pos
            if pos >= len(toks):
                raise InputError(f"{what}: {text.strip()!r} ends too early")
            pos += 1
            return toks[pos - 1]

        def atom() -> int:
            tok = take()
            if tok[0].isdigit():
                return _int(tok, what)
            if tok[0].isalpha() or tok[0] == "_":
                if tok in stack:
                    raise InputError(f"{what}: #define {tok} refers to itself ({' -> '.join([*stack, tok])})")
                if tok not in defines:
                    raise InputError(f"{what}: {tok} is not a #define of the file or of what it includes")
                return value(defines[tok], (*stack, tok))
            if tok == "(":
                v = either()
                if take() != ")":
                    raise InputError(f"{what}: unbalanced parentheses in {text.strip()!r}")
                return v
            if tok in "+-":
                v = atom()
                return -v if tok == "-" else v
            raise InputError(f"{what}: unexpected {tok!r} in {text.strip()!r}")

        def product() -> int:
            v = atom()
            while peek() in ("*", "/", "%"):
                op, w = take(), atom()
                if op == "*":
                    v *= w
                    continue
                if w == 0:
                    raise InputError(f"{what}: division by zero in {text.strip()!r}")
                q = abs(v) // abs(w) * (1 if (v < 0) == (w < 0) else -1)  # C truncates toward 0
                v = q if op == "/" else v - q * w
            return v

        def total() -> int:
            v = product()
            while peek() in ("+", "-"):
                op, w = take(), product()
                v = v + w if op == "+" else v - w
            return v

        def either() -> int:
            v = total()
            while peek() == "|":
                take()
                v |= total()
            return v

        v = either()
        if pos != len(toks):
            raise InputError(f"{what}: unexpected {toks[pos]!r} in {text.strip()!r}")
        return v

    return value(expr, ())


def _defines(path: Path, seen: set[Path] | None = None) -> dict[str, str]:
    """Object-like ``#define NAME text`` of ``path`` and of the local files it ``#include "..."``s
    (recursively); the file's own definitions win."""
    seen = set() if seen is None else seen
    path = path.resolve()
    if path in seen or not path.is_file():
        return {}
    seen.add(path)
    code = _code(path.read_text(errors="replace"))
    out: dict[str, str] = {}
    for name in _INCLUDE.findall(code):
        out.update(_defines(path.parent / name, seen))
    for name, paren, body in _DEFINE.findall(code):
        if not paren:  # NAME(...) is a function-like macro: not a constant
            out[name] = body.strip()
    return out


def source_closure(source: str | Path) -> list[Path]:
    """A kernel's source and every local file it ``#include "..."``s, recursively, each once: the
    files its compilation reads (the source first)."""
    path = Path(source)
    out: list[Path] = []
    todo = [(path if path.is_absolute() else REPO / path).resolve()]
    while todo:
        p = todo.pop()
        if p in out or not p.is_file():
            continue
        out.append(p)
        code = _code(p.read_text(errors="replace"))
        todo.extend((p.parent / name).resolve() for name in _INCLUDE.findall(code))
    return out


def source_text(source: str | Path) -> str:
    """The text of a kernel's ``.cu`` followed by that of the local files it includes
    (:func:`source_closure`): where its ``#ifndef`` parameters may be written."""
    return "\n".join(p.read_text(errors="replace") for p in source_closure(source))


def _call_arguments(code: str, start: int, what: str, macro: str = REGISTER_MACRO) -> list[str]:
    """The comma-separated arguments of the call whose ``(`` is at or after ``start``."""
    open_at = code.find("(", start)
    if open_at < 0 or code[start:open_at].strip():
        raise InputError(f"{what}: {macro} is not followed by its arguments")
    depth, args, here = 0, [], open_at + 1
    for i in range(open_at, len(code)):
        c = code[i]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                args.append(code[here:i].strip())
                return args
        elif c == "," and depth == 1:
            args.append(code[here:i].strip())
            here = i + 1
    raise InputError(f"{what}: {macro}( is never closed")


@dataclass(frozen=True)
class SplitK:
    """The terms of a launch that splits K across blocks (``SGEMM_SPLIT_K``, common.cuh)."""

    block_bytes: int  # bytes of loads one block keeps in flight
    inflight_bytes: int  # bytes in flight per SM that the splits bring the grid to
    max_splits: int  # the most splits of K
    chunk_k: int  # the least K a split takes

    def count(self, tiles: int, sms: int, K: int) -> int:
        """The blocks along K each of ``tiles`` output tiles gets on ``sms`` SMs at this ``K``:
        common.cuh's ``sgemm_split_count``, the rule the launcher applies (a CPU test compiles
        that one and compares)."""
        want = -(-self.inflight_bytes * sms // self.block_bytes)
        splits = -(-want // tiles)
        return max(1, min(splits, self.max_splits, -(-K // self.chunk_k)))


@dataclass(frozen=True)
class Registration:
    """The facts a ``.cu`` states in its ``SGEMM_REGISTER(symbol, BM, BN, BK, THREADS, FLAGS)``
    line: what the bindings register (``cuda_kernels`` ``registered()`` lists the same tuple)."""

    source: str
    symbol: str  # the extern "C" __global__ name: SASS symbol and binding name
    bm: int  # rows of C per block
    bn: int  # columns of C per block
    bk: int  # K-tile staged in shared memory; 0: none (K1, K2)
    threads: int  # threads per block
    flags: int  # OR of the SGEMM_* bits
    bits: Mapping[str, int] = field(default_factory=dict, compare=False, repr=False)
    split: SplitK | None = None  # its launch's split of K (SGEMM_SPLIT_K), where it splits

    def has(self, flag: str) -> bool:
        """Whether FLAGS holds ``flag`` (one of :data:`FLAG_NAMES`)."""
        return bool(self.flags & self.bits[flag])

    @property
    def facts(self) -> tuple[str, int, int, int, int, int]:
        """(symbol, BM, BN, BK, THREADS, FLAGS), as the extension's ``registered()`` gives them."""
        return (self.symbol, self.bm, self.bn, self.bk, self.threads, self.flags)

    @property
    def tile(self) -> tuple[int, int, int] | None:
        return (self.bm, self.bn, self.bk) if self.bk else None

    @property
    def multiple_of(self) -> tuple[int, int, int]:
        return (1, 4, 4) if self.has("SGEMM_VEC4") else (1, 1, 1)

    @property
    def needs_sm90(self) -> bool:
        return self.has("SGEMM_SM90")

    @property
    def y_walks_n(self) -> bool:
        return self.has("SGEMM_Y_WALKS_N")

    @property
    def balanced(self) -> bool:
        """A 1-D grid whose blocks share the tiles' work so that the SMs finish together (K15: the
        last wave's tiles cut along K; KD's tiled path: a block per SM with an even share of the
        units), not a block per BM x BN tile."""
        return self.has("SGEMM_BALANCED")

    @property
    def target(self) -> str:
        return f"cuda:{self.symbol}"


def read_registrations(source: str | Path) -> tuple[Registration, ...]:
    """Every ``SGEMM_REGISTER`` line of a ``.cu`` (a path relative to the repository root, or
    absolute), in the file's order, each line's arguments evaluated through the file's
    ``#define``s; read once per file. A file with no such line, two lines naming one symbol, or
    arguments that are not integer constants, is an InputError naming the file."""
    path = Path(source)
    return _registrations(path if path.is_absolute() else REPO / path, str(source))


def read_registration(source: str | Path) -> Registration:
    """The one ``SGEMM_REGISTER`` line of a ``.cu`` that registers one kernel
    (:func:`read_registrations`); a file with several is an InputError."""
    regs = read_registrations(source)
    if len(regs) != 1:
        raise InputError(f"{source}: {len(regs)} {REGISTER_MACRO} lines, where one kernel was asked for "
                         f"({', '.join(r.symbol for r in regs)})")
    return regs[0]


def with_overrides(source: str | Path, overrides: Mapping[str, object]) -> Registration:
    """:func:`read_registration` of the file compiled with ``-DNAME=VALUE`` for each of
    ``overrides`` (a sweep's variant of the file's ``#ifndef`` parameters); not cached."""
    path = Path(source)
    items = tuple(sorted((str(k), str(v)) for k, v in overrides.items()))
    regs = _registrations.__wrapped__(path if path.is_absolute() else REPO / path, str(source), items)
    if len(regs) != 1:
        raise InputError(f"{source}: {len(regs)} {REGISTER_MACRO} lines; a sweep varies a file of one kernel")
    return regs[0]


def define_value(source: str | Path, name: str, overrides: Mapping[str, object] = {}) -> int:
    """The integer value of macro ``name`` in ``source`` (through its ``#define``s), with
    ``overrides`` as ``-D`` would give them."""
    path = Path(source)
    path = path if path.is_absolute() else REPO / path
    defines = {**_defines(path), **{str(k): str(v) for k, v in overrides.items()}}
    if name not in defines:
        raise InputError(f"{source}: no #define {name}")
    return evaluate(name, defines, f"{source}: {name}")


@functools.cache
def _registrations(path: Path, name: str, overrides: tuple = ()) -> tuple[Registration, ...]:
    if not path.is_file():
        raise InputError(f"{name}: no such file (a CUDA kernel's source must exist)")
    # string literals emptied: a mention of the macro inside one is no use of it
    code = _STRING.sub('""', _code(path.read_text(errors="replace")))
    calls = _uses(code, _REGISTER)
    if not calls:
        raise InputError(
            f"{name}: no {REGISTER_MACRO} line; a CUDA kernel's .cu registers each kernel it launches with "
            f"{REGISTER_MACRO}(symbol, BM, BN, BK, THREADS, FLAGS), after its launcher")
    defines = {**_defines(path), **dict(overrides)}
    bits = {f: evaluate(f, defines, f"{name}: flag {f} (common.cuh)") for f in FLAG_NAMES}
    regs = tuple(_one(code, call.end(), name, defines, bits) for call in calls)
    symbols = [r.symbol for r in regs]
    twice = sorted({s for s in symbols if symbols.count(s) > 1})
    if twice:
        raise InputError(f"{name}: {REGISTER_MACRO} names {', '.join(twice)} more than once")
    splits = _splits(code, name, defines)
    stray = sorted(set(splits) - set(symbols))
    if stray:
        raise InputError(f"{name}: {SPLIT_MACRO} names {', '.join(stray)}, which no {REGISTER_MACRO} line "
                         "registers")
    return tuple(replace(r, split=splits[r.symbol]) if r.symbol in splits else r for r in regs)


def _uses(code: str, macro: re.Pattern) -> list[re.Match]:
    """The uses of a macro in ``code``, not its mention in a directive (#define, #ifdef, ...)."""
    return [m for m in macro.finditer(code)
            if not code[code.rfind("\n", 0, m.start()) + 1:m.start()].lstrip().startswith("#")]


def _splits(code: str, name: str, defines: dict) -> dict[str, SplitK]:
    """Symbol -> its ``SGEMM_SPLIT_K`` line's terms, evaluated; each term at least 1."""
    out: dict[str, SplitK] = {}
    for call in _uses(code, _SPLIT):
        args = _call_arguments(code, call.end(), name, SPLIT_MACRO)
        if len(args) != 5:
            raise InputError(f"{name}: {SPLIT_MACRO} takes 5 arguments "
                             f"(symbol, BLOCK_BYTES, INFLIGHT_BYTES, MAX_SPLITS, CHUNK_K); got {len(args)}")
        symbol = args[0]
        labels = ("BLOCK_BYTES", "INFLIGHT_BYTES", "MAX_SPLITS", "CHUNK_K")
        values = [evaluate(a, defines, f"{name}: {SPLIT_MACRO} {label}")
                  for a, label in zip(args[1:], labels)]
        if min(values) < 1:
            raise InputError(f"{name}: {SPLIT_MACRO}({symbol}, ...) needs every term >= 1; got {values}")
        if symbol in out:
            raise InputError(f"{name}: {SPLIT_MACRO} names {symbol} more than once")
        out[symbol] = SplitK(*values)
    return out


def _one(code: str, start: int, name: str, defines: dict, bits: dict) -> Registration:
    """The registration whose ``SGEMM_REGISTER`` arguments begin at ``start`` of ``code``."""
    args = _call_arguments(code, start, name)
    if len(args) != 6:
        raise InputError(f"{name}: {REGISTER_MACRO} takes 6 arguments "
                         f"(symbol, BM, BN, BK, THREADS, FLAGS); got {len(args)}")
    symbol = args[0]
    if not re.fullmatch(r"[A-Za-z_]\w*", symbol):
        raise InputError(f"{name}: {REGISTER_MACRO}'s first argument must be the kernel's name; "
                         f"got {symbol!r}")
    values = [evaluate(a, defines, f"{name}: {REGISTER_MACRO} {label}")
              for a, label in zip(args[1:], ("BM", "BN", "BK", "THREADS", "FLAGS"))]
    bm, bn, bk, threads, flags = values
    if min(bm, bn, threads) < 1 or bk < 0:
        raise InputError(f"{name}: {REGISTER_MACRO} needs BM, BN, THREADS >= 1 and BK >= 0; "
                         f"got {bm}, {bn}, {bk}, {threads}")
    known = functools.reduce(int.__or__, bits.values(), 0)
    if flags < 0 or flags & ~known:
        raise InputError(f"{name}: FLAGS = {flags} holds bits that no SGEMM_* flag names")
    return Registration(str(name), symbol, bm, bn, bk, threads, flags, bits)
