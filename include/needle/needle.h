/* Needle C ABI.
 *
 * 1. The drop-in ABI of SPEC §11 (the symbols the published Python package
 *    loads through ctypes): one process-wide session.
 *
 *      needle_init(system, tools_json, tool_index_path)   -> 0, or < 0 on error
 *      needle_complete(text, max_new_tokens, out, cap)    -> envelope bytes written
 *                                                            (without the NUL), or < 0
 *      needle_reset()
 *      needle_load(blob, size)                            -> 0, or < 0 on error
 *
 *    `system` may be NULL/empty, a JSON object of facts (date, locale,
 *    device, battery, network, location, user, assistant) or rendered
 *    "key: value" lines. The first needle_complete after needle_init is a
 *    query; after a `call` envelope the next text is that call's result.
 *    Without needle_load the library uses $NEEDLE_MODEL, else the model
 *    embedded at build time.
 *
 * 2. A handle-based API: any number of sessions, each with its own tools and
 *    cache, sharing one mapped model; different sessions may be used from
 *    different threads at once (one session from one thread at a time).
 *
 * Return codes: >= 0 success; NEEDLE_E_* below on failure, with a message
 * from needle_last_error(). A model-level failure of a turn (a query that is
 * not valid UTF-8 or holds a NUL, an invalid call, ...) is not a negative
 * code: it is an envelope with "type": "error" and a stable "error_code"; a
 * query or tool result refused that way leaves the session where it was. An
 * output buffer too small for the envelope returns NEEDLE_E_BUFFER and writes
 * nothing but a NUL at out[0]; the turn did happen, and needle_last_envelope()
 * returns it (for the global session).
 *
 * Errors of every function (besides those named on it):
 *   NEEDLE_E_ARGUMENT  a NULL or malformed argument; a handle that is NULL,
 *                      freed (used after free, freed twice), of the other
 *                      kind, or never issued: handles are checked against a
 *                      registry of live ones, never dereferenced blindly
 *   NEEDLE_E_INTERNAL  out of memory, or a bug (the message says which)
 *
 * needle_last_error() is per thread: the message of this thread's last
 * failed call, "" after a call that succeeded. The pointer stays valid until
 * the next needle_* call on the same thread.
 */
#ifndef NEEDLE_NEEDLE_H_
#define NEEDLE_NEEDLE_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NEEDLE_E_ARGUMENT (-1) /* NULL or malformed argument (tools JSON, system facts, blob) */
#define NEEDLE_E_BUFFER (-2)   /* output buffer too small */
#define NEEDLE_E_MODEL (-3)    /* no model, or a corrupt one */
#define NEEDLE_E_STATE (-4)    /* used out of order (complete before init) */
#define NEEDLE_E_INTERNAL (-5)

/* ---- the drop-in ABI (SPEC §11) */
/* tools_json: a JSON array of tool schemas ("[]" for none; NULL is
   NEEDLE_E_ARGUMENT). system: NULL, "", a JSON object of facts, or "key: value"
   lines; text that opens with '{' and is not a JSON object of known facts is
   NEEDLE_E_ARGUMENT naming the problem. On any failure the previous session
   (if there was one) stays as it was and keeps answering: nothing is half
   set up. NEEDLE_E_MODEL: no model (none loaded, none embedded). */
int needle_init(const char* system, const char* tools_json, const char* tool_index_path);
/* max_new_tokens: 0 for the session's option (256), else 1..65536 (anything
   else is NEEDLE_E_ARGUMENT). NEEDLE_E_STATE before needle_init. */
int needle_complete(const char* text, int max_new_tokens, char* out, int out_capacity);
void needle_reset(void);
/* On failure the loaded model and the session stay as they were. */
int needle_load(const char* blob, uint64_t size);

/* ---- extras */
const char* needle_last_error(void);                 /* this thread's last failure, "" if none; valid until its next call */
int needle_last_envelope(char* out, int out_capacity); /* the last envelope of the global session */
const char* needle_version(void);

/* ---- handles: opaque ids checked on every call (see above). A session
   handle is used by one thread at a time: a call while another thread is
   inside one on the same session returns NEEDLE_E_STATE (it does not wait). */
typedef struct needle_model needle_model;
typedef struct needle_session needle_session;

needle_model* needle_model_open(const char* path);                    /* NULL on error (NEEDLE_E_MODEL: unreadable or corrupt) */
needle_model* needle_model_from_blob(const void* blob, uint64_t size); /* copies the bytes; NULL on error */
needle_model* needle_model_default(void);                             /* $NEEDLE_MODEL or the embedded one; NULL on error */
int needle_model_free(needle_model* model);                           /* 0; sessions keep the model alive */

needle_session* needle_session_new(needle_model* model, const char* system, const char* tools_json,
                                   const char* tool_index_path); /* NULL on error; system and tools as needle_init */
/* A turn: as needle_complete. */
int needle_session_complete(needle_session* s, const char* text, int max_new_tokens, char* out, int out_capacity);
/* A turn of a named kind, whatever the last envelope was: a new user request
   (a call still waiting for its result stays unanswered), or the JSON result of the
   last call (NEEDLE_E_STATE when the last envelope was not a call). As
   needle_session_complete otherwise. */
int needle_session_query(needle_session* s, const char* text, int max_new_tokens, char* out, int out_capacity);
int needle_session_tool_result(needle_session* s, const char* result_json, int max_new_tokens, char* out,
                               int out_capacity);
/* The session's last envelope again ("" before its first turn): for a turn
   whose envelope did not fit the caller's buffer (NEEDLE_E_BUFFER). */
int needle_session_last_envelope(needle_session* s, char* out, int out_capacity);
int needle_session_pin(needle_session* s, const char* text); /* custom sink span; 0 */

/* ---- options: each declared once, in one table (needle_options_describe
   returns it as JSON: [{"name", "type", "default", "min", "max", "scope",
   "help"}]). An options object is a JSON object of some of them, e.g.
   {"reasoning_beams": 1, "max_new_tokens": 128, "copy_bias": "inf"}; a float
   option that takes infinity takes the string "inf". Setting is all or
   nothing: an unknown name, a value of the wrong type or out of range is
   NEEDLE_E_ARGUMENT with a message naming the option, and nothing changes.
   Options of scope "creation" (threads, window, tool_index_path) are fixed
   once the session exists: pass them to needle_session_new_with_options. */
needle_session* needle_session_new_with_options(needle_model* model, const char* system, const char* tools_json,
                                                const char* options_json); /* NULL on error; options may be NULL */
/* From the next turn on (window_requests: older requests leave the window at once). 0, or < 0 on error. */
int needle_session_set_options(needle_session* s, const char* options_json);
/* The session's options, every key: bytes written (without the NUL), or < 0
   (NEEDLE_E_BUFFER when out is too small; out[0] is then NUL). */
int needle_session_get_options(needle_session* s, char* out, int out_capacity);
int needle_options_describe(char* out, int out_capacity); /* the table; as needle_session_get_options */
/* Shorthands for {"window_requests": n} and {"reasoning_beams": n}: from the
   next request on, the model reads the conversation from the n-th most recent
   request on (1: the current one, read as a session's first request, so turn
   1,000 reads what turn 1 read; 0, the default: the whole window); the
   reasoning is the best of n beam hypotheses (1: greedy, the fastest; 2, the
   default; at most 8). <0 on error. */
int needle_session_set_window_requests(needle_session* s, int n);
int needle_session_set_reasoning_beams(needle_session* s, int n);
int needle_session_reset(needle_session* s); /* 0: the tools and options stay, the conversation goes */
int needle_session_save(needle_session* s, const char* path);    /* 0, or < 0 with a message naming the problem */
int needle_session_restore(needle_session* s, const char* path); /* 0, or < 0 with a message naming the problem */
int needle_session_free(needle_session* s);                      /* 0; a second free is NEEDLE_E_ARGUMENT */

#ifdef __cplusplus
}
#endif

#endif /* NEEDLE_NEEDLE_H_ */
