"""The engine's C ABI (include/needle/needle.h) through ctypes.

The library is, in this order: $NEEDLE_LIB_PATH (the published package's
variable); the copy installed inside this package (needle/_lib, put there by
`pip install`); a build tree around a source checkout (build/lib).
"""
import ctypes
import json
import os

_lib = None
_HERE = os.path.dirname(os.path.abspath(__file__))

# needle.h's return codes, by name.
ERROR_NAMES = {-1: "NEEDLE_E_ARGUMENT", -2: "NEEDLE_E_BUFFER", -3: "NEEDLE_E_MODEL", -4: "NEEDLE_E_STATE",
               -5: "NEEDLE_E_INTERNAL"}
E_BUFFER = -2


class NeedleError(RuntimeError):
    """A failure the engine reported: `code` is needle.h's return code (< 0),
    `code_name` its name, and the message is the engine's own."""

    def __init__(self, message, code=None):
        super().__init__(message)
        self.code = code
        self.code_name = ERROR_NAMES.get(code)


def library_path():
    """The path the library is (or would be) loaded from."""
    path = os.environ.get("NEEDLE_LIB_PATH")
    if path:
        return path
    installed = os.path.join(_HERE, "_lib", "libneedle.so")
    if os.path.exists(installed):
        return installed
    return os.path.normpath(os.path.join(_HERE, "..", "..", "build", "lib", "libneedle.so"))


def _declare(lib):
    c_char_p, c_int, c_void_p, c_uint64 = ctypes.c_char_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_uint64
    buf = ctypes.POINTER(ctypes.c_char)
    table = {
        # the drop-in ABI of SPEC §11
        "needle_init": ([c_char_p, c_char_p, c_char_p], c_int),
        "needle_complete": ([c_char_p, c_int, buf, c_int], c_int),
        "needle_reset": ([], None),
        "needle_load": ([c_char_p, c_uint64], c_int),
        "needle_last_error": ([], c_char_p),
        "needle_last_envelope": ([buf, c_int], c_int),
        "needle_version": ([], c_char_p),
        # handles
        "needle_model_open": ([c_char_p], c_void_p),
        "needle_model_from_blob": ([c_char_p, c_uint64], c_void_p),
        "needle_model_default": ([], c_void_p),
        "needle_model_free": ([c_void_p], c_int),
        "needle_session_new": ([c_void_p, c_char_p, c_char_p, c_char_p], c_void_p),
        "needle_session_new_with_options": ([c_void_p, c_char_p, c_char_p, c_char_p], c_void_p),
        "needle_session_complete": ([c_void_p, c_char_p, c_int, buf, c_int], c_int),
        "needle_session_query": ([c_void_p, c_char_p, c_int, buf, c_int], c_int),
        "needle_session_tool_result": ([c_void_p, c_char_p, c_int, buf, c_int], c_int),
        "needle_session_last_envelope": ([c_void_p, buf, c_int], c_int),
        "needle_session_pin": ([c_void_p, c_char_p], c_int),
        "needle_session_set_options": ([c_void_p, c_char_p], c_int),
        "needle_session_get_options": ([c_void_p, buf, c_int], c_int),
        "needle_options_describe": ([buf, c_int], c_int),
        "needle_session_set_window_requests": ([c_void_p, c_int], c_int),
        "needle_session_set_reasoning_beams": ([c_void_p, c_int], c_int),
        "needle_session_reset": ([c_void_p], c_int),
        "needle_session_save": ([c_void_p, c_char_p], c_int),
        "needle_session_restore": ([c_void_p, c_char_p], c_int),
        "needle_session_free": ([c_void_p], c_int),
    }
    for name, (args, res) in table.items():
        fn = getattr(lib, name)
        fn.argtypes = args
        fn.restype = res


def library():
    """Loads the shared library once and declares the ABI."""
    global _lib
    if _lib is not None:
        return _lib
    path = library_path()
    if not os.path.exists(path):
        raise NeedleError(f"the Needle library is not at {path}: build it (scripts/build), install the package "
                          "(python3 -m pip install ./python), or set NEEDLE_LIB_PATH to a libneedle.so")
    # An installed package carries the libraries libneedle.so links to (its
    # _lib folder); load them first so the package works without them on the system.
    bundled = os.path.join(os.path.dirname(path), "libhwy.so.1")
    if os.path.exists(bundled):
        ctypes.CDLL(bundled, mode=ctypes.RTLD_GLOBAL)
    lib = ctypes.CDLL(path)
    _declare(lib)
    _lib = lib
    return lib


def last_error(what, code):
    """A NeedleError for a failed call, with the engine's message."""
    msg = library().needle_last_error().decode("utf-8", "replace") or "no message"
    if code is None:  # a function that returns NULL on failure: no code to show
        return NeedleError(f"{what} failed: {msg}", code)
    return NeedleError(f"{what} failed ({ERROR_NAMES.get(code, code)}): {msg}", code)


def encode(x):
    """A str (or a JSON-able object, dumped) as UTF-8 bytes for the C ABI; None stays NULL."""
    if x is None:
        return None
    if isinstance(x, (bytes, bytearray)):  # passed as is: the engine checks they are UTF-8
        if b"\0" in x:
            raise ValueError(f"text holds a NUL byte at offset {bytes(x).index(0)}")
        return bytes(x)
    if not isinstance(x, str):
        x = json.dumps(x, ensure_ascii=False, separators=(",", ":"))
    if "\0" in x:  # a C string would end there: the engine would read a shorter text
        raise ValueError(f"text holds a NUL character at offset {x.index(chr(0))}")
    return x.encode("utf-8")


def read_json(call, what, capacity):
    """Runs call(buffer, capacity) -> bytes written or < 0, and parses the JSON."""
    buf = ctypes.create_string_buffer(capacity)
    n = call(buf, capacity)
    if n < 0:
        raise last_error(what, n)
    return json.loads(buf.raw[:n].decode("utf-8"))


def version():
    """The engine library's version string."""
    return library().needle_version().decode("utf-8")
