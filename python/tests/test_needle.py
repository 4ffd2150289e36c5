"""needle.Needle and needle.extract on the engine with its default model
(the library of $NEEDLE_LIB_PATH, else build/lib/libneedle.so)."""
import json
import os
import sys
import threading
from typing import Optional

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import needle  # noqa: E402

DATE = {"date": "2026-12-06"}


@needle.tool
def get_weather(city: str):
    """Get the current weather for a city.

    Args:
        city: the city name
    """
    return {"city": city, "temp_c": 27, "sky": "clear"}


@needle.tool
def set_thermostat(temperature: float = needle.Field("degrees Celsius", ge=10, le=30), room: Optional[str] = None):
    """Set the thermostat to a temperature."""
    return {"ok": True, "temperature": temperature}


def test_run_calls_the_function_and_returns_results():
    agent = needle.Needle(tools=[get_weather], system=DATE)
    env = agent.run("what's it like in Lagos right now?")
    assert env["type"] in ("respond", "call", "refuse")
    assert env["results"], env
    first = env["results"][0]
    assert first["name"] == "get_weather" and first["arguments"] == {"city": "Lagos"}
    assert first["result"] == {"city": "Lagos", "temp_c": 27, "sky": "clear"}


def test_run_feeds_an_exception_back_as_the_result():
    calls = []

    @needle.tool
    def get_weather(city: str):
        """Get the current weather for a city."""
        calls.append(city)
        raise ConnectionError("weather service down")

    env = needle.Needle(tools=[get_weather]).run("weather in Paris?", max_steps=1)
    assert calls and env["results"][0]["result"] == {"error": "ConnectionError: weather service down"}


def test_run_without_a_function_is_an_error_envelope():
    decl = get_weather.__needle_tool__  # declared as a dict: nothing to call
    env = needle.Needle(tools=[decl]).run("weather in Paris?")
    assert env["type"] == "error" and env["error_code"] == "invalid_state" and "get_weather" in env["error"]


def test_complete_follows_the_published_rule():
    agent = needle.Needle(tools=[get_weather])
    env = agent.complete("weather in Oslo")
    assert env["type"] == "call", env
    assert set(env) >= {"type", "success", "error", "error_code", "function_calls", "reasoning", "confidence"}
    after = agent.complete({"city": "Oslo", "temp_c": -3})  # the call's result
    assert after["type"] in ("respond", "call")
    agent.reset()
    with pytest.raises(needle.NeedleError, match="no call is waiting") as e:
        agent.tool_result({"x": 1})
    assert e.value.code == -4 and e.value.code_name == "NEEDLE_E_STATE"


def test_a_stated_value_outside_a_bound_is_never_changed():
    agent = needle.Needle(tools=[set_thermostat])
    for q in ("set the thermostat to 45 degrees", "set the thermostat to 5 degrees"):
        env = agent.query(q)
        stated = float(q.split()[-2])
        for call in env["function_calls"]:
            assert call["arguments"].get("temperature", stated) == stated, env  # refused or reported, never moved
    env = agent.query("set the thermostat to 21 degrees")
    assert env["type"] == "call" and env["function_calls"][0]["arguments"]["temperature"] == 21


def test_independent_sessions_share_one_model():
    a = needle.Needle(tools=[get_weather])
    b = needle.Needle(tools=[set_thermostat])
    assert a._model is b._model  # one mapped copy
    results = {}

    def turn(name, agent, q):
        results[name] = agent.query(q)

    threads = [threading.Thread(target=turn, args=("a", a, "weather in Rome")),
               threading.Thread(target=turn, args=("b", b, "set the thermostat to 20 degrees"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results["a"]["function_calls"][0]["name"] == "get_weather"
    assert results["b"]["function_calls"][0]["name"] == "set_thermostat"


def test_save_restore_pin_and_options(tmp_path):
    agent = needle.Needle(tools=[get_weather], options={"reasoning_beams": 1}, sinks=["The user lives in Lima."])
    assert agent.options()["reasoning_beams"] == 1
    agent.set_options(max_new_tokens=64)
    assert agent.options()["max_new_tokens"] == 64
    with pytest.raises(needle.NeedleError, match="reasoning_beams") as e:
        agent.set_options(reasoning_beams=99)
    assert e.value.code == -1
    first = agent.query("weather in Quito")
    path = tmp_path / "s.bin"
    agent.save(path)
    other = needle.Needle(tools=[get_weather], options={"reasoning_beams": 1}, sinks=["The user lives in Lima."])
    other.restore(path)
    assert other.tool_result({"temp_c": 20})["type"] in ("respond", "call")  # the restored call waits for its result
    with pytest.raises(needle.NeedleError, match="s.missing"):
        other.restore(tmp_path / "s.missing")
    assert first["type"] == "call"


def test_a_small_buffer_loses_nothing():
    env = needle.Needle(tools=[get_weather], buffer_size=64).query("weather in Lima")
    assert env["function_calls"][0]["arguments"] == {"city": "Lima"}


def test_bad_input_raises_with_the_engines_message(tmp_path):
    with pytest.raises(needle.NeedleError, match="needle_model_open failed"):
        needle.Needle(tools=[get_weather], weights=tmp_path / "none.cact")
    bad = tmp_path / "bad.cact"
    bad.write_bytes(b"not a model at all")
    with pytest.raises(needle.NeedleError):
        needle.Needle(weights=bad)
    with pytest.raises(needle.NeedleError, match="system"):
        needle.Needle(tools=[get_weather], system='{"date":')
    with pytest.raises(ValueError, match="NUL"):
        needle.Needle(tools=[get_weather]).query("weather\0 in Lima")
    with pytest.raises(ValueError, match="buffer_size"):
        needle.Needle(buffer_size=0)
    agent = needle.Needle(tools=[get_weather])
    agent.close()
    with pytest.raises(needle.NeedleError, match="closed"):
        agent.query("hi")
    with pytest.raises(UnicodeEncodeError):
        needle.Needle(tools=[get_weather]).query("\udcff bad")  # a lone surrogate has no UTF-8
    env = needle.Needle(tools=[get_weather]).query(b"\xff\xfe bad")  # bytes go as they are: the engine names them
    assert env["type"] == "error" and "UTF-8" in env["error"], env


def test_extract():
    pydantic = pytest.importorskip("pydantic")

    class Invoice(pydantic.BaseModel):
        vendor: str
        total: float

    got = needle.extract("Invoice from ACME, total 19.99", Invoice)
    assert isinstance(got, Invoice) and got.total == 19.99
    as_dict = needle.extract("Invoice from ACME, total 19.99", {"type": "object", "properties": {
        "vendor": {"type": "string"}, "total": {"type": "number"}}, "required": ["total"]})
    assert isinstance(as_dict, dict) and as_dict["total"] == 19.99
    tool_shaped = needle.extract("Invoice from ACME, total 19.99", {
        "name": "read_invoice", "description": "Read an invoice", "parameters": {"type": "object", "properties": {
            "total": {"type": "number"}}, "required": ["total"]}})
    assert tool_shaped == {"total": 19.99}
    assert needle.extract("hello there", Invoice) is None  # nothing to read: None
    with pytest.raises(TypeError):
        needle.extract("x", 3)


def test_describe_options_and_versions():
    names = {o["name"] for o in needle.describe_options()}
    assert {"reasoning_beams", "max_new_tokens", "window_requests"} <= names
    assert needle.engine_version().startswith("needle")
    assert os.path.exists(needle.library_path())
    assert json.dumps(needle.Needle().tools) == "[]"
