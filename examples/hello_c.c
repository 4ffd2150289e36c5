/* The handle-based C API: one model, a session with two tools, a query, and
 * the call's result fed back. Usage: hello_c [MODEL.cact] (default: the
 * embedded model or $NEEDLE_MODEL). */
#include <stdio.h>

#include "needle/needle.h"

static const char* kTools =
    "[{\"name\":\"set_lights\",\"description\":\"Turn the lights in a room on or off\","
    "\"parameters\":{\"type\":\"object\",\"properties\":{\"room\":{\"type\":\"string\"},"
    "\"on\":{\"type\":\"boolean\"}},\"required\":[\"room\",\"on\"]}},"
    "{\"name\":\"set_timer\",\"description\":\"Start a timer\",\"parameters\":{\"type\":\"object\","
    "\"properties\":{\"minutes\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":600}},\"required\":[\"minutes\"]}}]";

int main(int argc, char** argv) {
  needle_model* model = argc > 1 ? needle_model_open(argv[1]) : needle_model_default();
  if (!model) {
    fprintf(stderr, "hello_c: %s\n", needle_last_error());
    return 1;
  }
  needle_session* s = needle_session_new(model, "{\"date\":\"2026-11-30\"}", kTools, NULL);
  needle_model_free(model); /* the session keeps the model alive */
  if (!s) {
    fprintf(stderr, "hello_c: %s\n", needle_last_error());
    return 1;
  }
  char out[8192];
  int n = needle_session_complete(s, "turn off the kitchen lights", 0, out, sizeof out);
  if (n < 0) {
    fprintf(stderr, "hello_c: %s\n", needle_last_error());
    return 1;
  }
  printf("%s\n", out);
  if (n > 0 && out[9] == 'c') { /* {"type":"call",... : feed the result back */
    n = needle_session_complete(s, "{\"ok\":true}", 0, out, sizeof out);
    if (n >= 0) printf("%s\n", out);
  }
  needle_session_free(s);
  return n < 0 ? 1 : 0;
}
