"""The C ABI driven through ctypes exactly as the published package drives it
(NEEDLE_LIB_PATH, needle_init -> needle_complete -> a tool result -> respond,
needle_reset, needle_load from a memory blob, two agents in turn), plus the
failure cases: small buffers, malformed tools, concurrent sessions.

Needs NEEDLE_LIB_PATH and NEEDLE_CLI (to make a small random-weights model);
ctest sets both."""
import ctypes
import json
import os
import subprocess
import sys
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import needle  # noqa: E402

TOOLS_A = [
    {"name": "set_lights", "description": "Lights on/off", "parameters": {"type": "object", "properties": {
        "room": {"type": "string", "enum": ["kitchen", "hall"]}, "on": {"type": "boolean"}}, "required": ["room"]}},
    {"name": "set_alarm", "description": "Set an alarm", "parameters": {"type": "object", "properties": {
        "time": {"type": "string", "pattern": "^[0-2][0-9]:[0-5][0-9]$"}}, "required": ["time"]}},
]
TOOLS_B = [
    {"name": "robot_move", "description": "Move the robot", "parameters": {"type": "object", "properties": {
        "meters": {"type": "number", "minimum": 0, "maximum": 5}}, "required": ["meters"]}},
]
KEYS = ["type", "success", "error", "error_code", "function_calls", "reasoning", "confidence", "prefill_tps",
        "decode_tps", "peak_ram_mb"]


def make_model(seed):
    out = os.path.join(tempfile.mkdtemp(), f"m{seed}.cact")
    cfg = os.path.join(os.path.dirname(__file__), "..", "..", "testdata", "agent_small_config.json")
    subprocess.run([os.environ["NEEDLE_CLI"], "random", "--preset", cfg, "--tokenizer", "bytes", "--seed", str(seed),
                    "--out", out], check=True, stdout=subprocess.DEVNULL)
    with open(out, "rb") as f:
        return out, f.read()


class Abi(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.path, cls.blob = make_model(1)
        cls.lib = needle.library()

    def check_envelope(self, env, tools):
        for k in KEYS:
            self.assertIn(k, env)
        self.assertIn(env["type"], ["call", "refuse", "respond", "error"])
        names = {t["name"] for t in tools}
        for c in env["function_calls"]:
            self.assertIn(c["name"], names)
            self.assertIsInstance(c["arguments"], dict)

    def test_published_flow(self):
        agent = needle.Agent(TOOLS_A, system={"date": "2026-11-30"}, model_bytes=self.blob)
        env = agent.complete("turn on the kitchen lights", 64)
        self.check_envelope(env, TOOLS_A)
        self.assertTrue(env["success"], env)
        for _ in range(4):
            if env["type"] != "call":
                break
            env = agent.complete(json.dumps({"ok": True}), 64)  # the result of that call
            self.check_envelope(env, TOOLS_A)
            self.assertIn(env["type"], ["call", "respond"])
        agent.reset()
        again = agent.complete("turn on the kitchen lights", 64)
        first = needle.Agent(TOOLS_A, system={"date": "2026-11-30"}).complete("turn on the kitchen lights", 64)
        self.assertEqual(again["function_calls"], first["function_calls"])

    def test_two_agents_in_turn(self):
        self.assertEqual(self.lib.needle_load(self.blob, len(self.blob)), 0)
        for tools in (TOOLS_A, TOOLS_B, TOOLS_A):
            agent = needle.Agent(tools)
            env = agent.complete("move forward two meters", 64)
            self.check_envelope(env, tools)

    def test_small_buffer_writes_nothing_past_it(self):
        self.assertEqual(self.lib.needle_load(self.blob, len(self.blob)), 0)
        self.assertEqual(self.lib.needle_init(None, json.dumps(TOOLS_A).encode(), None), 0)
        buf = ctypes.create_string_buffer(b"Z" * 64, 64)
        rc = self.lib.needle_complete(b"lights on", 32, buf, 16)
        self.assertEqual(rc, -2)
        self.assertEqual(buf.raw[0], 0)
        self.assertEqual(buf.raw[1:], b"Z" * 63)
        big = ctypes.create_string_buffer(1 << 16)
        n = self.lib.needle_last_envelope(big, 1 << 16)
        self.assertGreater(n, 16)
        json.loads(big.raw[:n])

    def test_bad_input(self):
        self.assertEqual(self.lib.needle_load(self.blob, len(self.blob)), 0)
        self.assertLess(self.lib.needle_init(None, b'[{"name": "x", ', None), 0)
        self.assertIn(b"json", self.lib.needle_last_error().lower())
        self.assertLess(self.lib.needle_load(b"not a model", 11), 0)
        self.assertIn(b"invalid_archive", self.lib.needle_last_error())
        self.assertEqual(self.lib.needle_init(None, b"[]", None), 0)  # empty tool list: always refuse
        env = needle.Agent([]).complete("turn on the lights", 32)
        self.assertEqual(env["type"], "refuse")
        agent = needle.Agent(TOOLS_A)
        env = agent.complete("x" * 20000, 32)  # longer than the window and the input cap
        self.assertIn(env["type"], ["error", "call", "refuse"])
        env = agent.complete(b"caf\xc3 \xff lights".decode("latin-1"), 32)
        self.assertTrue(env["success"], env)
        tools = [{"name": f"t{i}", "parameters": {"type": "object", "properties": {"v": {"type": "integer"}}}}
                 for i in range(200)]
        env = needle.Agent(tools).complete("call t5", 32)
        self.assertTrue(env["success"], env)
        # (a typed anyOf is composed into a type array since 2026-12-07: `not` stays unsupported)
        env = needle.Agent([{"name": "f", "parameters": {"type": "object", "properties": {
            "a": {"type": "string", "not": {"maxLength": 1}}}}}]).complete("do f", 32)
        self.assertTrue(any("keyword 'not' is not supported" in w for w in env.get("warnings", [])), env)

    def test_misused_handles_and_nul(self):
        lib = self.lib
        model = needle.Model(blob=self.blob)
        s = lib.needle_session_new(model._h, None, json.dumps(TOOLS_A).encode(), None)
        self.assertTrue(s)
        self.assertEqual(lib.needle_session_free(s), 0)
        self.assertEqual(lib.needle_session_free(s), -1)  # freed twice: an error, not a crash
        self.assertIn(b"was freed", lib.needle_last_error())
        buf = ctypes.create_string_buffer(256)
        self.assertEqual(lib.needle_session_complete(s, b"hi", 8, buf, 256), -1)  # used after free
        self.assertEqual(lib.needle_session_complete(model._h, b"hi", 8, buf, 256), -1)  # a model as a session
        self.assertIn(b"needle_model handle where a needle_session", lib.needle_last_error())
        with self.assertRaises(ValueError):  # a NUL would end the C string: the engine would read less
            needle.Session(model, TOOLS_A).complete("lights\0 off", 16)

    def test_window_requests(self):
        model = needle.Model(blob=self.blob)
        s = needle.Session(model, TOOLS_A, window_requests=1)
        for q in ["lights in the hall", "alarm at 07:15", "kitchen off"]:
            env = s.complete(q, 48)
            self.assertTrue(env["success"], env)
        with self.assertRaises(needle.NeedleError):
            needle.Session(model, TOOLS_A, window_requests=-1)

    def test_reasoning_beams(self):
        model = needle.Model(blob=self.blob)
        for beams in (1, 3):
            s = needle.Session(model, TOOLS_A, reasoning_beams=beams)
            env = s.complete("lights in the hall", 48)
            self.assertTrue(env["success"], env)
        for bad in (0, 9):
            with self.assertRaises(needle.NeedleError):
                needle.Session(model, TOOLS_A, reasoning_beams=bad)

    def test_options(self):
        table = needle.describe_options()
        names = [row["name"] for row in table]
        self.assertIn("reasoning_beams", names)
        self.assertEqual(len(names), len(set(names)))
        model = needle.Model(blob=self.blob)
        s = needle.Session(model, TOOLS_A, options={"reasoning_beams": 1, "max_new_tokens": 40})
        self.assertEqual(s.options()["reasoning_beams"], 1)
        self.assertEqual(s.options()["copy_bias"], "inf")
        s.set_options(copy_bias=0, reasoning_beams=3)
        self.assertEqual(s.options()["reasoning_beams"], 3)
        self.assertTrue(s.complete("lights in the hall")["success"])
        for bad, why in [({"reasoning_beams": 9}, "reasoning_beams"), ({"beams": 1}, "unknown option 'beams'"),
                         ({"threads": 2}, "threads is fixed"), ({"reasoning_names": "yes"}, "true or false")]:
            with self.assertRaises(needle.NeedleError) as e:
                s.set_options(**bad)
            self.assertIn(why, str(e.exception))
        self.assertEqual(s.options()["reasoning_beams"], 3)  # nothing changed
        with self.assertRaises(needle.NeedleError):
            needle.Session(model, TOOLS_A, options={"max_new_tokens": -5})

    def test_sessions_on_threads(self):
        model = needle.Model(blob=self.blob)
        queries = ["lights in the hall", "alarm at 07:15", "kitchen off"]

        def run(i):
            s = needle.Session(model, TOOLS_A)
            return [json.dumps(s.complete(queries[(i + k) % 3], 48)["function_calls"]) for k in range(3)]

        seq = [run(i) for i in range(3)]
        par = [None] * 3

        def worker(i):
            par[i] = run(i)

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(par, seq)


if __name__ == "__main__":
    unittest.main()
