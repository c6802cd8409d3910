/* A C99 program's use of the C API (compiled as C with -pedantic -Werror): loads a model,
 * runs two greedy turns, cancels from the callback, and reports through a buffer. The C++ test
 * (test_c_api.cpp) calls oxi_test_c_api_user and checks what it wrote. */
#include <stdio.h>
#include <string.h>

#include "lib/llm/oxinfer_llm.h"

typedef struct {
  char text[4096];
  size_t len;
  int pieces;
  int stop_after; /* 0: never */
  oxi_llm_engine* engine;
} reply_buffer;

static int collect(const char* piece, size_t len, void* user_data) {
  reply_buffer* reply = (reply_buffer*)user_data;
  if (reply->len + len < sizeof reply->text) {
    memcpy(reply->text + reply->len, piece, len);
    reply->len += len;
    reply->text[reply->len] = '\0';
  }
  reply->pieces++;
  if (reply->stop_after > 0 && reply->pieces >= reply->stop_after) oxi_llm_cancel(reply->engine);
  return 1;
}

/* Greedy parameters on two threads: max_tokens a reply, n_ctx positions (0: the default). */
static oxi_llm_params greedy_params(int max_tokens, size_t n_ctx) {
  oxi_llm_params params = oxi_llm_default_params();
  params.threads = 2;
  params.temperature = 0.0f;
  params.max_tokens = max_tokens;
  params.n_ctx = n_ctx;
  return params;
}

/* Sends {role, text} (role NULL: raw); on failure frees the engine and returns 0. */
static int send_or_free(oxi_llm_engine* engine, const char* role, const char* text,
                        oxi_llm_stats* stats) {
  if (oxi_llm_send(engine, role, text, NULL, NULL, stats) == OXI_LLM_OK) return 1;
  oxi_llm_free(engine);
  return 0;
}

/* Returns 0 on success; writes "turn1|turn2|stop reasons|generated counts" into out. */
int oxi_test_c_api_user(const char* model_path, char* out, size_t out_len) {
  char err[512];
  oxi_llm_params params = greedy_params(6, 0);
  oxi_llm_engine* engine;
  oxi_llm_stats first, second, third;
  reply_buffer a, b, c;
  const char* stops[1];

  engine = oxi_llm_load(model_path, &params, err, sizeof err);
  if (engine == NULL) {
    snprintf(out, out_len, "load failed: %s", err);
    return 1;
  }
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  memset(&c, 0, sizeof c);
  if (oxi_llm_send(engine, "user", "w260", collect, &a, &first) != OXI_LLM_OK ||
      oxi_llm_send(engine, NULL, " w261", collect, &b, &second) != OXI_LLM_OK) {
    snprintf(out, out_len, "send failed: %s", oxi_llm_last_error(engine));
    oxi_llm_free(engine);
    return 1;
  }
  /* Cancel from the callback after one piece; no max_tokens. */
  params.max_tokens = -1;
  stops[0] = "\x01\x02";
  params.stop = stops;
  params.n_stop = 1;
  oxi_llm_set_params(engine, &params);
  oxi_llm_reset(engine);
  c.stop_after = 1;
  c.engine = engine;
  if (oxi_llm_send(engine, "user", "w262", collect, &c, &third) != OXI_LLM_OK) {
    snprintf(out, out_len, "send failed: %s", oxi_llm_last_error(engine));
    oxi_llm_free(engine);
    return 1;
  }
  snprintf(out, out_len, "%s|%s|%d %d %d|%zu %zu|%d", a.text, b.text, first.stop_reason,
           second.stop_reason, third.stop_reason, first.generated_tokens,
           second.generated_tokens, c.pieces);
  /* Errors come back as codes and messages. */
  if (oxi_llm_send(NULL, "user", "x", NULL, NULL, NULL) != OXI_LLM_INVALID_ARGUMENT) return 2;
  if (oxi_llm_load_state(engine, "/nonexistent/state") != OXI_LLM_ERROR) return 3;
  if (strlen(oxi_llm_last_error(engine)) == 0) return 4;
  oxi_llm_free(engine);
  if (oxi_llm_load("/nonexistent/model.gguf", NULL, err, sizeof err) != NULL) return 5;
  if (strlen(err) == 0) return 6;
  return 0;
}

/* A chat of `turns` user lines "w26<k> w263" in a context of 160 positions, 8 tokens a reply;
 * returns the messages dropped in all, or -1 on an error. */
long oxi_test_c_api_long_chat(const char* model_path, int turns) {
  char err[512], line[32];
  const oxi_llm_params params = greedy_params(8, 160);
  oxi_llm_engine* engine = oxi_llm_load(model_path, &params, err, sizeof err);
  oxi_llm_stats stats;
  long dropped = 0;
  int turn;

  if (engine == NULL) return -1;
  for (turn = 0; turn < turns; ++turn) {
    snprintf(line, sizeof line, "w26%d w263", turn % 10);
    if (!send_or_free(engine, "user", line, &stats)) return -1;
    dropped += (long)stats.dropped_messages;
  }
  oxi_llm_free(engine);
  return dropped;
}

/* A raw reply of 60 tokens in a context of 32 positions with context_shift on and keep 2; the
 * generated count and the shifts as generated * 1000 + shifts, or -1 on an error. */
long oxi_test_c_api_context_shift(const char* model_path) {
  char err[512];
  oxi_llm_params params = greedy_params(60, 32);
  oxi_llm_engine* engine;
  oxi_llm_stats stats;

  if (params.context_shift != 0) return -1; /* off unless asked for, as llama.cpp */
  params.context_shift = 1;
  params.keep = 2;
  engine = oxi_llm_load(model_path, &params, err, sizeof err);
  if (engine == NULL || !send_or_free(engine, NULL, "w260 w261", &stats)) return -1;
  oxi_llm_free(engine);
  return (long)stats.generated_tokens * 1000 + (long)stats.context_shifts;
}

/* Two conversations of one user message each, "w260 w261 w262 w263" then, after
 * oxi_llm_new_conversation, "w260 w261 w262 w264": the second turn's cached tokens, or -1. */
long oxi_test_c_api_new_conversation(const char* model_path) {
  char err[512];
  const oxi_llm_params params = greedy_params(4, 0);
  oxi_llm_engine* engine = oxi_llm_load(model_path, &params, err, sizeof err);
  oxi_llm_stats stats;

  if (engine == NULL || !send_or_free(engine, "user", "w260 w261 w262 w263", NULL)) return -1;
  oxi_llm_new_conversation(engine);
  if (!send_or_free(engine, "user", "w260 w261 w262 w264", &stats)) return -1;
  oxi_llm_free(engine);
  return (long)stats.cached_tokens;
}

/* A reply's bytes in hex (a random model's reply may hold a NUL byte), cut to fit. */
typedef struct {
  char text[2 * sizeof(((reply_buffer*)0)->text) + 1];
} hex_text;

static hex_text hex_of(const reply_buffer* reply) {
  hex_text hex;
  size_t i;
  hex.text[0] = '\0';
  for (i = 0; i < reply->len; ++i)
    snprintf(hex.text + 2 * i, 3, "%02x", (unsigned)(unsigned char)reply->text[i]);
  return hex;
}

/* One raw turn with llama.cpp's other sampling options (temperature 0.9, seed 5, frequency
 * 0.5, presence 0.25, typical 0.9, token 270 biased by +2 and token 5 never), and a second
 * engine whose end tokens (end_ids, n_ends of them) are biased by +100 but ignored
 * (ignore_eos): writes "reply in hex|generated tokens|stop reason" of each into out; 0 on
 * success. */
int oxi_test_c_api_sampling(const char* model_path, const int32_t* end_ids, size_t n_ends,
                            char* out, size_t out_len) {
  char err[512];
  oxi_llm_params params = greedy_params(24, 0);
  const int32_t bias_tokens[2] = {270, 5};
  float bias_values[2];
  float end_bias[8];
  size_t i;
  oxi_llm_engine* engine;
  oxi_llm_stats first, second;
  reply_buffer a, b;

  if (n_ends > 8) return 1;
  bias_values[0] = 2.0f;
  bias_values[1] = -1.0f / 0.0f;
  params.temperature = 0.9f;
  params.seed = 5;
  params.frequency_penalty = 0.5f;
  params.presence_penalty = 0.25f;
  params.typical_p = 0.9f;
  params.bias_tokens = bias_tokens;
  params.bias_values = bias_values;
  params.n_bias = 2;
  engine = oxi_llm_load(model_path, &params, err, sizeof err);
  if (engine == NULL) return 1;
  memset(&a, 0, sizeof a);
  if (oxi_llm_send(engine, NULL, "w260 w261", collect, &a, &first) != OXI_LLM_OK) {
    oxi_llm_free(engine);
    return 1;
  }
  oxi_llm_free(engine);

  params = greedy_params(20, 0);
  for (i = 0; i < n_ends; ++i) end_bias[i] = 100.0f;
  params.bias_tokens = end_ids;
  params.bias_values = end_bias;
  params.n_bias = n_ends;
  params.ignore_eos = 1;
  engine = oxi_llm_load(model_path, &params, err, sizeof err);
  if (engine == NULL) return 1;
  memset(&b, 0, sizeof b);
  if (oxi_llm_send(engine, NULL, "w260 w261", collect, &b, &second) != OXI_LLM_OK) {
    oxi_llm_free(engine);
    return 1;
  }
  oxi_llm_free(engine);
  snprintf(out, out_len, "%s|%zu|%d\n%s|%zu|%d", hex_of(&a).text, first.generated_tokens,
           first.stop_reason, hex_of(&b).text, second.generated_tokens, second.stop_reason);
  return 0;
}
