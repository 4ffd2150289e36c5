"""Needle: tiny on-device tool calling (the published package's Python API
over the open C++ engine).

    import needle

    @needle.tool
    def get_weather(city: str):
        "Get the current weather for a city."
        return {"city": city, "temp_c": 27, "sky": "clear"}

    agent = needle.Needle(tools=[get_weather])
    print(agent.run("what's it like in Lagos right now?")["results"])

Needle(...).complete() returns one turn's envelope (SPEC §10), .run() calls
the tools' functions until the answer, needle.extract() reads a record.
The engine library is $NEEDLE_LIB_PATH, else the copy installed with the
package, else build/lib/libneedle.so of a source checkout.
"""
from ._abi import NeedleError, library, library_path, version as engine_version
from ._lowlevel import Agent, Session
from ._needle import Model, Needle, describe_options, extract
from ._schema import Field, function_schema, parse_docstring, tool
from ._version import __version__

__all__ = ["Needle", "tool", "Field", "extract", "NeedleError", "describe_options", "function_schema",
           "parse_docstring", "Model", "Session", "Agent", "library", "library_path", "engine_version",
           "__version__"]
