"""The C ABI's two lower levels: Agent, the process-wide session of the
drop-in ABI (needle_init / needle_complete, SPEC §11), and Session, a handle
session on an explicit Model (the handle API of needle.h)."""
import ctypes
import json

from . import _abi

_OUT = 1 << 16


def _envelope(call, what):
    buf = ctypes.create_string_buffer(_OUT)
    n = call(buf, _OUT)
    if n < 0:
        raise _abi.last_error(what, n)
    return json.loads(buf.raw[:n].decode("utf-8"))


class Agent:
    """The process-wide session of the drop-in ABI, driven as the published package drives it."""

    def __init__(self, tools, system=None, tool_index_path=None, model_bytes=None):
        lib = _abi.library()
        if model_bytes is not None:
            rc = lib.needle_load(model_bytes, len(model_bytes))
            if rc != 0:
                raise _abi.last_error("needle_load", rc)
        rc = lib.needle_init(_abi.encode(system), _abi.encode(tools), _abi.encode(tool_index_path))
        if rc < 0:
            raise _abi.last_error("needle_init", rc)

    def complete(self, text, max_new_tokens=256):
        return _envelope(lambda b, c: _abi.library().needle_complete(_abi.encode(text), max_new_tokens, b, c),
                         "needle_complete")

    def reset(self):
        _abi.library().needle_reset()


class Session:
    """An independent session (own tools and cache) on a shared Model."""

    def __init__(self, model, tools, system=None, tool_index_path=None, window_requests=0, reasoning_beams=None,
                 options=None):
        """options: a dict of session options (describe_options() lists them),
        e.g. {"reasoning_beams": 1}. window_requests: the model reads the
        conversation from the n-th most recent request on (0: the whole
        window). reasoning_beams: the best of n beam hypotheses (1: greedy)."""
        self._model = model  # keeps the handle alive
        opts = dict(options or {})
        if tool_index_path:
            opts["tool_index_path"] = tool_index_path
        if window_requests:
            opts["window_requests"] = int(window_requests)
        if reasoning_beams is not None:
            opts["reasoning_beams"] = int(reasoning_beams)
        self._h = _abi.library().needle_session_new_with_options(model._h, _abi.encode(system), _abi.encode(tools),
                                                                 _abi.encode(opts))
        if not self._h:
            raise _abi.last_error("needle_session_new_with_options", None)

    def set_options(self, **options):
        n = _abi.library().needle_session_set_options(self._h, _abi.encode(options))
        if n < 0:
            raise _abi.last_error("needle_session_set_options", n)

    def options(self):
        return _envelope(lambda b, c: _abi.library().needle_session_get_options(self._h, b, c),
                         "needle_session_get_options")

    def complete(self, text, max_new_tokens=256):
        return _envelope(lambda b, c: _abi.library().needle_session_complete(self._h, _abi.encode(text),
                                                                            max_new_tokens, b, c),
                         "needle_session_complete")

    def reset(self):
        rc = _abi.library().needle_session_reset(self._h)
        if rc < 0:
            raise _abi.last_error("needle_session_reset", rc)

    def __del__(self):
        if getattr(self, "_h", None):
            _abi.library().needle_session_free(self._h)
            self._h = None
