/* oxinfer_llm.h: the LLM engine (lib/llm/engine.h) for C and other languages' FFI.
 *
 *   #include "lib/llm/oxinfer_llm.h"
 *
 *   static int print_piece(const char* piece, size_t len, void* user_data) {
 *     fwrite(piece, 1, len, stdout);
 *     return 1;  // 0 stops generation
 *   }
 *
 *   char err[512];
 *   oxi_llm_params params = oxi_llm_default_params();
 *   params.threads = 8;
 *   params.temperature = 0.0f;
 *   oxi_llm_engine* engine = oxi_llm_load("model.gguf", &params, err, sizeof err);
 *   if (!engine) { fprintf(stderr, "%s\n", err); return 1; }
 *   oxi_llm_stats stats;
 *   if (oxi_llm_send(engine, "user", "Hello!", print_piece, NULL, &stats) != OXI_LLM_OK)
 *     fprintf(stderr, "%s\n", oxi_llm_last_error(engine));
 *   printf("\n%.1f tok/s\n", stats.generation_tok_s);
 *   oxi_llm_free(engine);
 *
 * Errors are return codes plus a message (never exceptions). One engine serves one thread at a
 * time, except oxi_llm_cancel, which any thread may call while oxi_llm_send runs.
 */
#ifndef OXINFER_LLM_H
#define OXINFER_LLM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct oxi_llm_engine oxi_llm_engine;

enum {
  OXI_LLM_OK = 0,
  OXI_LLM_ERROR = 1, /* see the message */
  OXI_LLM_INVALID_ARGUMENT = 2
};

/* Why a turn's generation ended (oxi_llm_stats.stop_reason). */
enum {
  OXI_LLM_STOP_EOS = 0,
  OXI_LLM_STOP_STRING = 1,
  OXI_LLM_STOP_MAX_TOKENS = 2,
  OXI_LLM_STOP_CONTEXT_FULL = 3,
  OXI_LLM_STOP_CANCELLED = 4,
  OXI_LLM_STOP_CHOICE = 5
};

typedef struct oxi_llm_params {
  /* Loading. */
  int threads;               /* 0: every core */
  size_t n_ctx;              /* 0: the model's context, capped at 4096 */
  const char* quant;         /* NULL, "q8" or "q4": quantize an HF checkpoint at load */
  const char* chat_template; /* NULL: the model's own; else a fallback name or a Jinja file */
  const char* cache_type; /* KV cache "f16" or "f32"; NULL: f16 for quantized weights, else f32 */
  /* Speculative decoding (llama.cpp's --model-draft): a small model of the same vocabulary
   * drafts up to draft_max tokens (stopping below draft_p_min probability; drafts shorter than
   * draft_min unused) that the model checks in one batch; the reply is the model's alone.
   * NULL or "": off. */
  const char* draft_model;
  int draft_max;
  int draft_min;
  float draft_p_min;
  /* Sampling and generation (per send). */
  float temperature;          /* <= 0: greedy */
  int top_k;                  /* <= 0: off */
  float top_p;                /* >= 1: off */
  float min_p;                /* <= 0: off */
  float repeat_penalty;       /* 1: off */
  int repeat_last_n;          /* tokens the penalties look at; < 0: all */
  float frequency_penalty;    /* 0: off; minus this x a recent token's count */
  float presence_penalty;     /* 0: off; minus this once for each recent token */
  float typical_p;            /* locally typical sampling; >= 1: off */
  const int32_t* bias_tokens; /* n_bias tokens whose logits get bias_values added first */
  const float* bias_values;   /* (-INFINITY: never picked) */
  size_t n_bias;
  float top_n_sigma;     /* keep logits within n standard deviations of the top; <= 0: off */
  float xtc_probability; /* XTC: how often the likeliest tokens leave; 0: off */
  float xtc_threshold;   /* ... those at or above this probability, but the last of them */
  int mirostat;          /* 0: off; 1 or 2: Mirostat in place of the filters and penalties */
  float mirostat_tau;    /* target surprise, bits */
  float mirostat_eta;    /* learning rate */
  uint64_t seed;
  int max_tokens;          /* < 0: until an end token or a full context */
  const char* const* stop; /* stop strings, n_stop of them */
  size_t n_stop;
  /* A reply that fills the context: 0 stops it (OXI_LLM_STOP_CONTEXT_FULL); 1 keeps BOS and
   * the first `keep` prompt tokens (< 0: the whole prompt), drops half of the rest, evaluates
   * what stays again and generates on (llama.cpp's --context-shift, exact). */
  int context_shift;
  int keep;
  /* 1: the end tokens are never picked; the reply runs to max_tokens, a stop string or a full
   * context (llama.cpp's --ignore-eos). */
  int ignore_eos;
  /* A GBNF grammar the reply must follow (llama.cpp's --grammar); NULL or "": none. */
  const char* grammar;
  /* Or a JSON Schema the reply must be JSON of (llama.cpp's --json-schema); not both. */
  const char* json_schema;
} oxi_llm_params;

typedef struct oxi_llm_stats {
  size_t prompt_tokens; /* evaluated this turn */
  size_t cached_tokens; /* reused from the previous turns */
  size_t generated_tokens;
  double prompt_ms;
  double prompt_tok_s;
  double generation_ms;
  double generation_tok_s;
  int stop_reason;         /* OXI_LLM_STOP_* */
  size_t dropped_messages; /* the oldest history messages that left an outgrown context */
  size_t context_shifts;   /* times this turn's reply shifted the context (context_shift) */
  size_t draft_tokens;     /* draft_model: tokens the draft proposed this turn */
  size_t draft_accepted;   /* ... and the model's sampling then picked */
} oxi_llm_stats;

/* Called with each piece of reply text (complete UTF-8, not NUL-terminated); return 0 to stop. */
typedef int (*oxi_llm_piece_fn)(const char* piece, size_t len, void* user_data);

oxi_llm_params oxi_llm_default_params(void);

/* spec: a local model path or an org/name[:QUANT] Hugging Face repo id. params may be NULL
 * (defaults). Returns NULL on failure with the message in err (err may be NULL). */
oxi_llm_engine* oxi_llm_load(const char* spec, const oxi_llm_params* params, char* err,
                             size_t err_len);

/* One chat turn: appends the message {role, text} ("system" or "user") to the history and
 * generates the assistant's reply through on_piece (may be NULL). A conversation that leaves
 * less than a quarter of the context (or max_tokens) for the reply loses its oldest exchanges,
 * system messages kept, until it fills at most half (stats->dropped_messages). role NULL means
 * raw mode: text continues the context without a chat template. stats may be NULL. */
int oxi_llm_send(oxi_llm_engine* engine, const char* role, const char* text,
                 oxi_llm_piece_fn on_piece, void* user_data, oxi_llm_stats* stats);

/* Replaces the sampling / generation part of the parameters for later turns. A grammar or
 * JSON Schema that does not convert is an error, the parameters before kept. */
int oxi_llm_set_params(oxi_llm_engine* engine, const oxi_llm_params* params);

/* Stops a running oxi_llm_send before its next token. Any thread. */
void oxi_llm_cancel(oxi_llm_engine* engine);
/* Forgets the history and the cache. */
void oxi_llm_reset(oxi_llm_engine* engine);
/* Forgets the history but keeps the cache: a new conversation that starts with the same
 * tokens as the last (a system prompt) evaluates only what differs, with the same results. */
void oxi_llm_new_conversation(oxi_llm_engine* engine);

/* The KV cache and history in a file, and back (another process may continue from it). */
int oxi_llm_save_state(oxi_llm_engine* engine, const char* path);
int oxi_llm_load_state(oxi_llm_engine* engine, const char* path);

/* The embedding of `text` (lib/llm/embeddings.h, as llama-embedding): tokenized as the model
 * says, run from an empty cache of its own (the conversation's cache stays), its tokens'
 * final-normed states pooled by `pooling` ("mean", "cls" or "last"; NULL: the model's) and
 * normalized by `norm` (-1 none, 0 int16 scale, 1 taxicab, 2 euclidean, p > 2 the p-norm).
 * *dim gets the embedding's length (the model's width); the floats go to `out` when `capacity`
 * holds them, else OXI_LLM_INVALID_ARGUMENT (ask with out NULL, capacity 0 for the length). */
int oxi_llm_embed(oxi_llm_engine* engine, const char* text, const char* pooling, int norm,
                  float* out, size_t capacity, size_t* dim);

/* The message of the engine's latest failed call ("" when none); valid until the next call. */
const char* oxi_llm_last_error(const oxi_llm_engine* engine);

void oxi_llm_free(oxi_llm_engine* engine);

#ifdef __cplusplus
}
#endif

#endif /* OXINFER_LLM_H */
