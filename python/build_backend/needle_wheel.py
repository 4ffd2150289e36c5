"""A PEP 517 build backend for the needle package, in the source tree.

It needs nothing beyond the standard library (so `pip install ./python`
works offline) and writes one platform wheel: the package's Python files, the
engine library built by CMake and the shared libraries it links to that a
bare machine may lack (Highway), with their licence.
"""
import base64
import hashlib
import os
import re
import subprocess
import sysconfig
import zipfile

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # python/
_NAME = "needle"
_BUNDLED = ("libhwy.so",)  # linked libraries that travel with libneedle.so
_LICENCES = {"libhwy.so": "/usr/share/doc/libhwy1/copyright"}


def _version():
    text = open(os.path.join(_ROOT, _NAME, "_version.py"), encoding="utf-8").read()
    return re.search(r'__version__ = "([^"]+)"', text).group(1)


def _engine_library():
    path = os.environ.get("NEEDLE_LIB_PATH") or os.path.join(_ROOT, "..", "build", "lib", "libneedle.so")
    path = os.path.realpath(path)
    if not os.path.isfile(path):
        raise RuntimeError(f"no engine library at {path}: build it first (scripts/build), or set NEEDLE_LIB_PATH "
                           "to a libneedle.so")
    return path


def _linked(path):
    """{soname: path} of the libraries `path` links to that are bundled."""
    out = subprocess.run(["ldd", path], capture_output=True, text=True, check=True).stdout
    found = {}
    for line in out.splitlines():
        m = re.match(r"\s*(\S+) => (\S+)", line)
        if m and m.group(1).startswith(_BUNDLED):
            found[m.group(1)] = m.group(2)
    return found


def _tag():
    return "py3-none-" + sysconfig.get_platform().replace("-", "_").replace(".", "_")


def _metadata():
    return (f"Metadata-Version: 2.1\nName: {_NAME}\nVersion: {_version()}\n"
            "Summary: Tiny on-device tool calling: the Needle engine's Python API\n"
            "Requires-Python: >=3.9\n")


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def get_requires_for_build_wheel(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version = _version()
    dist_info = f"{_NAME}-{version}.dist-info"
    files = []  # (arcname, bytes, executable)
    package = os.path.join(_ROOT, _NAME)
    for name in sorted(os.listdir(package)):
        if name.endswith(".py"):
            files.append((f"{_NAME}/{name}", open(os.path.join(package, name), "rb").read(), False))
    engine = _engine_library()
    files.append((f"{_NAME}/_lib/libneedle.so", open(engine, "rb").read(), True))
    for soname, path in _linked(engine).items():
        files.append((f"{_NAME}/_lib/{soname}", open(os.path.realpath(path), "rb").read(), True))
        licence = next((v for k, v in _LICENCES.items() if soname.startswith(k)), None)
        if licence and os.path.exists(licence):
            files.append((f"{_NAME}/_lib/{soname}.copyright", open(licence, "rb").read(), False))
    files.append((f"{dist_info}/METADATA", _metadata().encode(), False))
    files.append((f"{dist_info}/WHEEL", (f"Wheel-Version: 1.0\nGenerator: needle_wheel\nRoot-Is-Purelib: false\n"
                                         f"Tag: {_tag()}\n").encode(), False))
    files.append((f"{dist_info}/top_level.txt", f"{_NAME}\n".encode(), False))
    record = [_record_line(a, d) for a, d, _ in files] + [f"{dist_info}/RECORD,,"]
    files.append((f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode(), False))

    wheel_name = f"{_NAME}-{version}-{_tag()}.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w", zipfile.ZIP_DEFLATED) as z:
        for arcname, data, executable in files:
            info = zipfile.ZipInfo(arcname, date_time=(2026, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if executable else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return wheel_name
