/* A program built outside the source tree against an installed needle
 * (scripts/test-install): the embedded default model, one tool, one request;
 * prints the envelope. */
#include <stdio.h>

#include <needle/needle.h>

static const char* kTools =
    "[{\"name\":\"set_timer\",\"description\":\"Start a timer\",\"parameters\":{\"type\":\"object\","
    "\"properties\":{\"minutes\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":600}},\"required\":[\"minutes\"]}}]";

int main(void) {
  needle_model* model = needle_model_default();
  if (!model) {
    fprintf(stderr, "consumer: %s\n", needle_last_error());
    return 1;
  }
  needle_session* s = needle_session_new(model, NULL, kTools, NULL);
  needle_model_free(model); /* the session keeps the model alive */
  char out[8192];
  if (!s || needle_session_complete(s, "set a timer for 10 minutes", 0, out, sizeof out) < 0) {
    fprintf(stderr, "consumer: %s\n", needle_last_error());
    return 1;
  }
  printf("%s\n", out);
  needle_session_free(s);
  return 0;
}
