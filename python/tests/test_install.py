"""`python3 -m pip install ./python` into a fresh venv, then the package used
from outside the source tree: it carries the engine library and the default
model, so nothing else is needed (NEEDLE_LIB_PATH unset)."""
import os
import subprocess
import sys
import venv

import pytest

PYTHON_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

SCRIPT = """
import json, needle
assert "site-packages" in needle.library_path(), needle.library_path()

@needle.tool
def get_weather(city: str):
    "Get the current weather for a city."
    return {"city": city, "temp_c": 27, "sky": "clear"}

agent = needle.Needle(tools=[get_weather])
print(json.dumps({"version": needle.__version__, "results": agent.run("what's it like in Lagos right now?")["results"]}))
"""


@pytest.mark.skipif(os.environ.get("NEEDLE_SANITIZE") == "1", reason="the wheel would carry an instrumented library")
def test_pip_install_into_a_venv_works_outside_the_tree(tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, system_site_packages=False).create(env_dir)
    py = str(env_dir / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if k not in ("NEEDLE_LIB_PATH", "PYTHONPATH", "NEEDLE_MODEL")}
    lib = os.environ.get("NEEDLE_LIB_PATH")  # the library this test run built, if set
    build_env = dict(env, **({"NEEDLE_LIB_PATH": lib} if lib else {}))
    subprocess.run([py, "-m", "pip", "install", "--no-index", "--quiet", PYTHON_DIR], check=True, env=build_env,
                   cwd=tmp_path)
    out = subprocess.run([py, "-c", SCRIPT], check=True, capture_output=True, text=True, env=env, cwd=tmp_path)
    got = __import__("json").loads(out.stdout.strip().splitlines()[-1])
    assert got["results"][0]["name"] == "get_weather"
    assert got["results"][0]["result"]["city"] == "Lagos"
