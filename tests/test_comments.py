"""Code comments say what the code does; what a run measured lives in the report and in docs/notes/.

A comment or docstring in cuda_kernels/ (``*.cu``, ``*.cuh``, ``*.cpp``) or triton_kernels/
(``*.py``) must not quote a measurement: a time with a unit, a percentage, a speed-up such as
``1.15x``, a bandwidth or a FLOP rate, a clock, or a commit hash. Counts that follow from the
design ("16 x 8 FFMA per k-step", "N % 4 == 0", "8x the L2") are not measurements and pass.
Only comments are read: C/C++ ``//`` and ``/* */`` (string and character literals skipped),
Python ``#`` comments and string statements (docstrings). Runs on the CPU, nothing compiled.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# What a measurement looks like in prose. Each pattern must not start inside a name or a number
# (``K10_BM`` is not a number, ``0x1f`` not a hash).
MEASUREMENTS = {
    "a time": re.compile(r"(?<![\w.])\d+(?:\.\d+)?\s?(?:ns|us|µs|ms)\b"),
    # "92.6%" or "92.6 % of ..."; not a modulo ("N % 4", "16 % 4", "(f % 2)"): a spaced % followed
    # by an operand (a name, a number, a parenthesis) is the C or Python operator
    "a percentage": re.compile(
        r"(?<![\w.])\d+(?:\.\d+)?(?:%(?![A-Za-z_(])|\s%(?!\s*[A-Za-z_\d(])|"
        r"\s%(?=\s*(?:of|faster|slower|more|less|fewer|higher|lower|better|worse|above|below)\b))"
    ),
    # "1.15x", "1.3×", "0.92x K12", "2x faster"; not a tile or a count ("32x32", "4 x LDS.128",
    # "8x the L2")
    "a speed-up": re.compile(
        r"(?<![\w.])(?:\d+\.\d+\s?[x×](?![\w.])|\d+(?:\.\d+)?\s?[x×]\s+(?:faster|slower|speed))"
    ),
    "a bandwidth": re.compile(r"\b[KMGT]i?B/s\b"),
    "a FLOP rate": re.compile(r"\b[GT]FLOP/?s\b|\b[GT]FLOPS\b"),
    "a clock": re.compile(r"(?<![\w.])\d+(?:\.\d+)?\s?[GM]Hz\b"),
    # 7 to 40 hex digits with at least one digit and one letter a-f (a short or full commit hash)
    "a commit hash": re.compile(r"(?<![\w.])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}(?![\w])"),
}


def c_comments(text: str) -> list[tuple[int, str]]:
    """(line, text) of every ``//`` and ``/* */`` comment of C/C++ source, each line of a block
    comment on its own; string and character literals are skipped, not read as comments."""
    out: list[tuple[int, str]] = []
    i, line, n = 0, 1, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            line += text.count("\n", i, j)
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append((line, text[i + 2:j]))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j
            for k, part in enumerate(text[i + 2:j].split("\n")):
                out.append((line + k, part))
            line += text.count("\n", i, j)
            i = j + 2
        else:
            i += 1
    return out


def python_comments(text: str) -> list[tuple[int, str]]:
    """(line, text) of every ``#`` comment and of every string statement (module, class and
    function docstrings, and bare strings used as comments), one entry per line."""
    out: list[tuple[int, str]] = []
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            out.append((tok.start[0], tok.string[1:]))
    for node in ast.walk(ast.parse(text)):
        if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)):
            for k, part in enumerate(node.value.value.split("\n")):
                out.append((node.lineno + k, part))
    return sorted(out)


def comments(path: Path) -> list[tuple[int, str]]:
    text = path.read_text(encoding="utf-8")
    return python_comments(text) if path.suffix == ".py" else c_comments(text)


def measurements(path: Path) -> list[str]:
    """``file:line: what: text`` for every comment line of ``path`` that quotes a measurement."""
    rel = path.relative_to(REPO).as_posix() if path.is_relative_to(REPO) else path.name
    found = []
    for line, text in comments(path):
        for what, pattern in MEASUREMENTS.items():
            m = pattern.search(text)
            if m:
                found.append(f"{rel}:{line}: {what} ({m.group(0).strip()!r}): {text.strip()}")
    return found


def sources() -> list[Path]:
    files = [p for ext in ("*.cu", "*.cuh", "*.cpp") for p in (REPO / "cuda_kernels").glob(ext)]
    files += (REPO / "triton_kernels").glob("*.py")
    return sorted(files)


@pytest.mark.parametrize("path", sources(), ids=lambda p: p.relative_to(REPO).as_posix())
def test_no_comment_quotes_a_measurement(path):
    found = measurements(path)
    assert not found, ("comments quote measurements (history goes to docs/notes/, figures to the "
                       "report):\n" + "\n".join(found))


def test_the_sources_are_found():
    names = {p.name for p in sources()}
    assert {"common.cuh", "tma.cuh", "bindings.cpp", "k1_naive.cu", "k14_warp_specialised.cu",
            "kd_common.cuh", "kd_gemv_stream.cu", "kd_gemm_tiled.cu", "kd_gemm_tiled.cuh",
            "tile.py", "g12_gluon.py", "ta_autotuned.py"} <= names


@pytest.mark.parametrize("text", [
    "// 3.1 ms on the H200",
    "// 2.651 ms against 2.674",
    "// 65.3 us",
    "// the default 92.6% of cuBLAS",
    "// within +-10%",
    "// 88.1 % of cuBLAS",
    "// 1.19x K13 (77.9%)",
    "// 1.3× faster",
    "// 0.92x K12",
    "// 2x faster than K9",
    "// 4.28 TB/s this run",
    "// 51.2 TFLOP/s",
    "// at 1.80 GHz",
    "// timed at commit 2b49cfb",
    "/* the run at 8c8b57c516c3 */",
])
def test_a_measurement_is_caught(tmp_path, text):
    path = tmp_path / "k.cu"
    path.write_text(f'#include "common.cuh"\n{text}\nint x;\n')
    assert measurements(path), text


@pytest.mark.parametrize("text", [
    "// Needs N % 4 == 0 and K % 4 == 0",
    "// column 4 * (f % (BN / 4)), 16 % 4 == 0",
    "// k % 2, t % 2, lane % K13_LN",
    "// 16 x 8 FFMA per k-step, 4 x LDS.128, 128 threads",
    "// a 128x128x8 block tile, 32x32 tiles, 8x the L2",
    "// 2^24 multiply-adds, 227 * 1024 bytes, 0x1f, 65535",
    "// try_wait with a suspend-time hint (ns)",
    "// K10_BM 256, sm_90a, K13's 26 KB stages",
])
def test_design_facts_pass(tmp_path, text):
    path = tmp_path / "k.cu"
    path.write_text(f"{text}\n")
    assert not measurements(path), measurements(path)


def test_only_comments_are_read(tmp_path):
    """A string literal is code, not a comment; a Python string that is not a statement too."""
    cu = tmp_path / "k.cu"
    cu.write_text('const char *s = "3.1 ms // 92.6%"; // plain\nchar q = \'"\'; // 1.5 ms\n')
    assert [m.split(":")[1] for m in measurements(cu)] == ["2"]
    py = tmp_path / "m.py"
    py.write_text('"""Module."""\nMSG = "3.1 ms"\n\n\ndef f():\n    """Took 2.0 ms."""\n    x = 1  # 5%\n')
    assert sorted(m.split(":")[1] for m in measurements(py)) == ["6", "7"]
