"""Every example in the README runs.

- ```python blocks: each in its own interpreter, with this tree's package;
- ```sh blocks: bash -euo pipefail from the repository root (they use build/);
- ```cmake blocks: each line is in examples/consumer/CMakeLists.txt, which
  scripts/test-install configures and builds against an installed copy;
- ```js blocks: each is a file of clients/openai that an sh block runs.
A block right after `<!-- readme-test: skip: REASON -->` is not run; the
reason must be given. Output blocks (```json) and the layout are not examples.
"""
import json
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BLOCK = re.compile(r"(?:<!-- readme-test: skip:(?P<reason>[^\n]*?)-->\n)?```(?P<lang>[a-z]*)\n(?P<body>.*?)```",
                   re.S)
EXAMPLES = ("python", "sh", "cmake", "js")


def blocks():
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    out = []
    for m in BLOCK.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        out.append((line, m.group("lang"), m.group("body"), m.group("reason")))
    return out


def example_blocks(lang):
    return [pytest.param(body, reason, id=f"README.md:{line}")
            for line, l, body, reason in blocks() if l == lang]


def test_the_readme_has_examples_and_every_skip_says_why():
    found = [b for b in blocks() if b[1] in EXAMPLES]
    assert len([b for b in found if b[1] == "python"]) >= 4
    assert len([b for b in found if b[1] == "sh" and b[3] is None]) >= 2
    for line, lang, _, reason in found:
        assert reason is None or len(reason.strip()) > 10, f"README.md:{line}: a skip needs its reason"


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "python")
    return env


sanitized = pytest.mark.skipif(os.environ.get("NEEDLE_SANITIZE") == "1",
                               reason="the README's commands use the Release build (build/)")


@sanitized
@pytest.mark.parametrize("body,reason", example_blocks("python"))
def test_python_example(body, reason, tmp_path):
    if reason:
        pytest.skip(reason)
    subprocess.run([sys.executable, "-c", body], check=True, env=_env(), cwd=tmp_path, timeout=300)


@sanitized
@pytest.mark.parametrize("body,reason", example_blocks("sh"))
def test_sh_example(body, reason):
    if reason:
        pytest.skip(reason)
    subprocess.run(["bash", "-euo", "pipefail", "-c", body], check=True, env=_env(), cwd=ROOT, timeout=300)


@pytest.mark.parametrize("body,reason", example_blocks("cmake"))
def test_cmake_example_is_the_consumer_project(body, reason):
    project = open(os.path.join(ROOT, "examples", "consumer", "CMakeLists.txt"), encoding="utf-8").read()
    for line in body.strip().splitlines():
        assert line.strip() in project, f"{line!r} is not in examples/consumer/CMakeLists.txt"


@pytest.mark.parametrize("body,reason", example_blocks("js"))
def test_js_example_is_a_file_the_tests_run(body, reason):
    # The README's JavaScript is a file of clients/openai, run by the sh block
    # above it (and its folder's tests by ctest clients.openai).
    folder = os.path.join(ROOT, "clients", "openai")
    files = [open(os.path.join(folder, f), encoding="utf-8").read() for f in os.listdir(folder) if f.endswith(".mjs")]
    assert any(body.strip() == f.strip() for f in files), "a js block of the README is not a file in clients/openai"


@sanitized
def test_the_demo_answers_every_request():
    out = subprocess.run(["bash", os.path.join(ROOT, "scripts", "demo"), "--requests"], check=True,
                         capture_output=True, text=True, cwd=ROOT, timeout=300).stdout
    envelopes = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert len(envelopes) == out.count("\n> ") + out.startswith("> ") and len(envelopes) == 4, out
    assert all(e["type"] in ("call", "refuse") for e in envelopes), out
