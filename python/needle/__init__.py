"""Needle: a ctypes client for the engine's C ABI (include/needle/needle.h).

The library is found at $NEEDLE_LIB_PATH (the published package's variable),
else next to this package in a build tree (build/lib/libneedle.so).

    import needle
    agent = needle.Agent(tools=[...], system={"date": "2026-11-30"})
    env = agent.complete("turn on the kitchen lights")   # dict: the envelope
    if env["type"] == "call":
        env = agent.complete(json.dumps({"ok": True}))     # the call's result
"""
import ctypes
import json
import os

__all__ = ["Agent", "Session", "Model", "library", "NeedleError"]

_lib = None


class NeedleError(RuntimeError):
    pass


def library():
    """Loads the shared library once and declares the ABI."""
    global _lib
    if _lib is not None:
        return _lib
    path = os.environ.get("NEEDLE_LIB_PATH")
    if not path:
        here = os.path.dirname(os.path.abspath(__file__))
        path = os.path.join(here, "..", "..", "build", "lib", "libneedle.so")
    lib = ctypes.CDLL(path)
    c_char_p, c_int, c_void_p, c_uint64 = ctypes.c_char_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_uint64
    lib.needle_init.argtypes = [c_char_p, c_char_p, c_char_p]
    lib.needle_init.restype = c_int
    lib.needle_complete.argtypes = [c_char_p, c_int, ctypes.POINTER(ctypes.c_char), c_int]
    lib.needle_complete.restype = c_int
    lib.needle_reset.argtypes = []
    lib.needle_reset.restype = None
    lib.needle_load.argtypes = [c_char_p, c_uint64]
    lib.needle_load.restype = c_int
    lib.needle_last_error.argtypes = []
    lib.needle_last_error.restype = c_char_p
    lib.needle_last_envelope.argtypes = [ctypes.POINTER(ctypes.c_char), c_int]
    lib.needle_last_envelope.restype = c_int
    lib.needle_model_open.argtypes = [c_char_p]
    lib.needle_model_open.restype = c_void_p
    lib.needle_model_from_blob.argtypes = [c_char_p, c_uint64]
    lib.needle_model_from_blob.restype = c_void_p
    lib.needle_model_default.argtypes = []
    lib.needle_model_default.restype = c_void_p
    lib.needle_model_free.argtypes = [c_void_p]
    lib.needle_model_free.restype = c_int
    lib.needle_session_new.argtypes = [c_void_p, c_char_p, c_char_p, c_char_p]
    lib.needle_session_new.restype = c_void_p
    lib.needle_session_complete.argtypes = [c_void_p, c_char_p, c_int, ctypes.POINTER(ctypes.c_char), c_int]
    lib.needle_session_complete.restype = c_int
    lib.needle_session_new_with_options.argtypes = [c_void_p, c_char_p, c_char_p, c_char_p]
    lib.needle_session_new_with_options.restype = c_void_p
    lib.needle_session_set_options.argtypes = [c_void_p, c_char_p]
    lib.needle_session_set_options.restype = c_int
    lib.needle_session_get_options.argtypes = [c_void_p, ctypes.POINTER(ctypes.c_char), c_int]
    lib.needle_session_get_options.restype = c_int
    lib.needle_options_describe.argtypes = [ctypes.POINTER(ctypes.c_char), c_int]
    lib.needle_options_describe.restype = c_int
    lib.needle_session_set_window_requests.argtypes = [c_void_p, c_int]
    lib.needle_session_set_window_requests.restype = c_int
    lib.needle_session_set_reasoning_beams.argtypes = [c_void_p, c_int]
    lib.needle_session_set_reasoning_beams.restype = c_int
    lib.needle_session_reset.argtypes = [c_void_p]
    lib.needle_session_reset.restype = c_int
    lib.needle_session_free.argtypes = [c_void_p]
    lib.needle_session_free.restype = c_int
    _lib = lib
    return lib


def _error(what, code):
    msg = library().needle_last_error().decode("utf-8", "replace")
    return NeedleError(f"{what} failed ({code}): {msg}")


def _enc(x):
    if x is None:
        return None
    if not isinstance(x, str):
        x = json.dumps(x, ensure_ascii=False, separators=(",", ":"))
    if "\0" in x:  # a C string would end there: the engine would read a shorter text
        raise ValueError(f"text holds a NUL character at offset {x.index(chr(0))}")
    return x.encode("utf-8")


_OUT = 1 << 16


class Agent:
    """The process-wide session of the drop-in ABI (needle_init / needle_complete)."""

    def __init__(self, tools, system=None, tool_index_path=None, model_bytes=None):
        lib = library()
        if model_bytes is not None:
            rc = lib.needle_load(model_bytes, len(model_bytes))
            if rc != 0:
                raise _error("needle_load", rc)
        rc = lib.needle_init(_enc(system), _enc(tools), _enc(tool_index_path))
        if rc < 0:
            raise _error("needle_init", rc)

    def complete(self, text, max_new_tokens=256):
        buf = ctypes.create_string_buffer(_OUT)
        n = library().needle_complete(_enc(text), max_new_tokens, buf, _OUT)
        if n < 0:
            raise _error("needle_complete", n)
        return json.loads(buf.raw[:n].decode("utf-8"))

    def reset(self):
        library().needle_reset()


class Model:
    def __init__(self, path=None, blob=None):
        lib = library()
        if blob is not None:
            self._h = lib.needle_model_from_blob(blob, len(blob))
        elif path is not None:
            self._h = lib.needle_model_open(_enc(path))
        else:
            self._h = lib.needle_model_default()
        if not self._h:
            raise _error("model", 0)

    def __del__(self):
        if getattr(self, "_h", None):
            library().needle_model_free(self._h)
            self._h = None


def describe_options():
    """The session options table: [{"name", "type", "default", "min", "max", "scope", "help"}]."""
    buf = ctypes.create_string_buffer(_OUT)
    n = library().needle_options_describe(buf, _OUT)
    if n < 0:
        raise _error("needle_options_describe", n)
    return json.loads(buf.raw[:n].decode("utf-8"))


class Session:
    """An independent session (own tools and cache) on a shared Model."""

    def __init__(self, model, tools, system=None, tool_index_path=None, window_requests=0, reasoning_beams=None,
                 options=None):
        """options: a dict of session options (describe_options() lists them
        with their defaults, ranges and help), e.g. {"reasoning_beams": 1}.
        window_requests: the model reads the conversation from the n-th most
        recent request on (1: the current one, read as a session's first;
        0: the whole window).
        reasoning_beams: the reasoning is the best of n beam search hypotheses
        (1: greedy; None: the engine's default, 2)."""
        self._model = model  # keeps the handle alive
        opts = dict(options or {})
        if tool_index_path:
            opts["tool_index_path"] = tool_index_path
        if window_requests:
            opts["window_requests"] = int(window_requests)
        if reasoning_beams is not None:
            opts["reasoning_beams"] = int(reasoning_beams)
        self._h = library().needle_session_new_with_options(model._h, _enc(system), _enc(tools), _enc(opts))
        if not self._h:
            raise _error("needle_session_new_with_options", 0)

    def set_options(self, **options):
        """Changes options from the next turn on; all or nothing (an unknown
        name or a bad value raises NeedleError naming it)."""
        n = library().needle_session_set_options(self._h, _enc(options))
        if n < 0:
            raise _error("needle_session_set_options", n)

    def options(self):
        """The session's options, every one."""
        buf = ctypes.create_string_buffer(_OUT)
        n = library().needle_session_get_options(self._h, buf, _OUT)
        if n < 0:
            raise _error("needle_session_get_options", n)
        return json.loads(buf.raw[:n].decode("utf-8"))

    def complete(self, text, max_new_tokens=256):
        buf = ctypes.create_string_buffer(_OUT)
        n = library().needle_session_complete(self._h, _enc(text), max_new_tokens, buf, _OUT)
        if n < 0:
            raise _error("needle_session_complete", n)
        return json.loads(buf.raw[:n].decode("utf-8"))

    def reset(self):
        rc = library().needle_session_reset(self._h)
        if rc < 0:
            raise _error("needle_session_reset", rc)

    def __del__(self):
        if getattr(self, "_h", None):
            library().needle_session_free(self._h)
            self._h = None
