"""needle.Needle and needle.extract: the published package's surface over the
handle C API (each Needle is its own session; sessions share one mapped model)."""
import ctypes
import json
import os
import threading

from . import _abi
from ._schema import call_arguments, is_pydantic_model, normalize_tools, pydantic_instance, pydantic_schema

_models = {}  # weights key -> Model: one mapped copy per file, shared by every Needle on it
_models_lock = threading.Lock()


class Model:
    """A loaded .cact model: a file path, bytes, or None for the default one
    ($NEEDLE_MODEL, else the model embedded in the library)."""

    def __init__(self, path=None, blob=None):
        lib = _abi.library()
        if blob is not None:
            self._h = lib.needle_model_from_blob(blob, len(blob))
            what = "needle_model_from_blob"
        elif path is not None:
            self._h = lib.needle_model_open(_abi.encode(os.fspath(path)))
            what = "needle_model_open"
        else:
            self._h = lib.needle_model_default()
            what = "needle_model_default"
        if not self._h:
            raise _abi.last_error(what, None)

    def __del__(self):
        if getattr(self, "_h", None):
            _abi.library().needle_model_free(self._h)
            self._h = None


def shared_model(weights=None):
    """The Model for `weights` (None, a path, or bytes), loaded once per process."""
    if isinstance(weights, (bytes, bytearray, memoryview)):
        return Model(blob=bytes(weights))
    key = os.path.realpath(os.fspath(weights)) if weights is not None else None
    with _models_lock:
        model = _models.get(key)
        if model is None:
            model = _models[key] = Model(path=key)
        return model


def _error_envelope(message, code):
    return {"type": "error", "success": False, "error": message, "error_code": code, "function_calls": [],
            "reasoning": "", "confidence": None}


class Needle:
    """A tool-calling agent: its own session (tools pinned as sinks, the
    conversation in a bounded window) over a shared model.

        agent = needle.Needle(tools=[get_weather], system={"date": "2026-12-06"})
        agent.run("what's it like in Lagos?")["results"]

    tools: functions (their signature and docstring declare them; run() calls
    them), pydantic models, dicts {"name", "description", "parameters"}, or a
    JSON string of them. system: facts (a dict, or "key: value" lines).
    weights: a .cact path or its bytes (None: the default model).
    tool_index_path: a file persisting the retrieval embeddings of the tools.
    buffer_size: the first size of the envelope buffer (a longer envelope is
    fetched again, never lost). options: session options (describe_options()).
    sinks: texts pinned beside the tools for the whole session."""

    def __init__(self, tools=None, system=None, weights=None, tool_index_path=None, buffer_size=65536, *,
                 options=None, sinks=None):
        self.tools, self._functions = normalize_tools(tools)
        if not isinstance(buffer_size, int) or buffer_size < 64:
            raise ValueError(f"buffer_size must be an int of at least 64 bytes, not {buffer_size!r}")
        self.buffer_size = buffer_size
        self._model = shared_model(weights)
        opts = dict(options or {})
        if tool_index_path is not None:
            opts["tool_index_path"] = os.fspath(tool_index_path)
        self._lock = threading.Lock()  # a session serves one thread at a time
        self._h = _abi.library().needle_session_new_with_options(
            self._model._h, _abi.encode(system), _abi.encode(self.tools), _abi.encode(opts) if opts else None)
        if not self._h:
            raise _abi.last_error("Needle", None)
        for text in ([sinks] if isinstance(sinks, str) else sinks or []):
            self.pin(text)

    # ---- turns

    def complete(self, text, max_new_tokens=256):
        """One turn, the published rule: after a `call` envelope the text is
        that call's result (JSON), otherwise a new request. Returns the envelope."""
        if not isinstance(text, str):
            text = json.dumps(text, ensure_ascii=False, default=str)
        return self._turn("needle_session_complete", text, max_new_tokens)

    def query(self, text, max_new_tokens=256):
        """A new request, whatever the last envelope was."""
        return self._turn("needle_session_query", text, max_new_tokens)

    def tool_result(self, result, max_new_tokens=256):
        """The result of the last call (any JSON value, or a JSON string)."""
        if not isinstance(result, str):
            result = json.dumps(result, ensure_ascii=False, default=str)
        return self._turn("needle_session_tool_result", result, max_new_tokens)

    def run(self, query, max_steps=8, max_new_tokens=256):
        """Answers `query`, calling the tools' Python functions and feeding
        their results back until the model answers `respond` or `refuse`, or
        after max_steps rounds of calls. The final envelope carries every
        executed call as `results`: [{"name", "arguments", "result"}]. A
        function that raises gives the model {"error": "..."} as its result."""
        executed = []
        env = self.query(query, max_new_tokens)
        step = 0
        while env["type"] == "call" and step < max_steps:
            results = []
            for call in env["function_calls"]:
                fn = self._functions.get(call["name"])
                if fn is None:
                    env = _error_envelope(f"run: no Python function for tool '{call['name']}' (declare it as a "
                                          "function to have run() call it, or answer with tool_result())",
                                          "invalid_state")
                    env["results"] = executed
                    return env
                try:
                    result = fn(**call_arguments(fn, call["arguments"]))
                except Exception as e:  # the model sees the failure as the tool's result
                    result = {"error": f"{type(e).__name__}: {e}"}
                executed.append({"name": call["name"], "arguments": call["arguments"], "result": result})
                results.append(result)
            env = self.tool_result(results[0] if len(results) == 1 else results, max_new_tokens)
            step += 1
        env["results"] = executed
        return env

    def _turn(self, fn_name, text, max_new_tokens):
        if not isinstance(max_new_tokens, int) or isinstance(max_new_tokens, bool):
            raise TypeError(f"max_new_tokens must be an int, not {max_new_tokens!r}")
        lib = _abi.library()
        with self._lock:
            h = self._handle()
            buf = ctypes.create_string_buffer(self.buffer_size)
            n = getattr(lib, fn_name)(h, _abi.encode(text), max_new_tokens, buf, self.buffer_size)
            capacity = self.buffer_size
            while n == _abi.E_BUFFER:  # the turn happened: fetch its envelope with room enough
                capacity *= 4
                buf = ctypes.create_string_buffer(capacity)
                n = lib.needle_session_last_envelope(h, buf, capacity)
            if n < 0:
                raise _abi.last_error(fn_name, n)
            return json.loads(buf.raw[:n].decode("utf-8"))

    # ---- session state

    def reset(self):
        """Drops the conversation; the tools, system facts, sinks and options stay."""
        self._call("needle_session_reset")

    def pin(self, text):
        """Pins `text` (e.g. a user profile) as a sink: visible for the whole session."""
        self._call("needle_session_pin", _abi.encode(text))

    def save(self, path):
        """Saves the whole session (its cache included) to a file."""
        self._call("needle_session_save", _abi.encode(os.fspath(path)))

    def restore(self, path):
        """Restores a saved session (the same model). On failure the session
        keeps its own tools and setup, with no conversation."""
        self._call("needle_session_restore", _abi.encode(os.fspath(path)))

    def set_options(self, **options):
        """Changes session options from the next turn on; all or nothing."""
        self._call("needle_session_set_options", _abi.encode(options))

    def options(self):
        """Every session option and its value."""
        with self._lock:
            h = self._handle()
            return _abi.read_json(lambda b, c: _abi.library().needle_session_get_options(h, b, c),
                                  "needle_session_get_options", 1 << 14)

    def close(self):
        """Frees the session (also done when the object is collected)."""
        h, self._h = getattr(self, "_h", None), None
        if h:
            _abi.library().needle_session_free(h)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    def _handle(self):
        if not self._h:
            raise _abi.NeedleError("this Needle was closed", -1)
        return self._h

    def _call(self, fn_name, *args):
        with self._lock:
            rc = getattr(_abi.library(), fn_name)(self._handle(), *args)
        if rc < 0:
            raise _abi.last_error(fn_name, rc)


def describe_options():
    """The session options table: [{"name", "type", "default", "min", "max", "scope", "help"}]."""
    return _abi.read_json(lambda b, c: _abi.library().needle_options_describe(b, c), "needle_options_describe", 1 << 16)


_EXTRACT_DESCRIPTION = "Extract the fields of this record from the text"


def extract(text, schema, system=None, max_new_tokens=256, *, weights=None):
    """The record `schema` describes, read from `text`; None when nothing is found.

    schema: a pydantic model class (returns an instance; nested models and
    $ref are resolved), a tool-shaped dict {"name", "description",
    "parameters"} (returns a dict), or a bare JSON Schema object (returns a
    dict). An engine error raises NeedleError."""
    if is_pydantic_model(schema):
        parameters = pydantic_schema(schema)
        description = parameters.pop("description", "") or _EXTRACT_DESCRIPTION
        declaration = {"name": "extract", "description": description, "parameters": parameters}
    elif isinstance(schema, dict) and "parameters" in schema and "name" in schema:
        declaration = schema
    elif isinstance(schema, dict):
        declaration = {"name": "extract", "description": _EXTRACT_DESCRIPTION, "parameters": schema}
    else:
        raise TypeError(f"extract: schema must be a pydantic model class or a dict, not {type(schema).__name__}")
    with Needle(tools=[declaration], system=system, weights=weights) as session:
        env = session.query(text, max_new_tokens)
    if env["type"] == "error":
        raise _abi.NeedleError(f"extract: {env.get('error')} ({env.get('error_code')})", -1)
    if env["type"] != "call" or not env["function_calls"]:
        return None
    arguments = env["function_calls"][0]["arguments"]
    return pydantic_instance(schema, arguments) if is_pydantic_model(schema) else arguments
