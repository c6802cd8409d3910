/* oxillm: text in, LLM answers out. Each answer is generated on the source pad's task, so the
 * streaming thread only queues work; answers carry the media span of the text they answer. */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_OXI_LLM (gst_oxi_llm_get_type())
G_DECLARE_FINAL_TYPE(GstOxiLlm, gst_oxi_llm, GST, OXI_LLM, GstElement)

typedef enum {
  GST_OXI_LLM_MODE_PER_BUFFER = 0,
  GST_OXI_LLM_MODE_ACCUMULATE = 1,
} GstOxiLlmMode;

/* The KV cache's element type; auto = the library's choice (f16 when the model's matrices are
 * quantized, f32 when they are float). */
typedef enum {
  GST_OXI_LLM_CACHE_TYPE_AUTO = 0,
  GST_OXI_LLM_CACHE_TYPE_F16 = 1,
  GST_OXI_LLM_CACHE_TYPE_F32 = 2,
} GstOxiLlmCacheType;

/* The C++ state (model, engine, work queue), defined in gstoxillm.cpp. */
typedef struct _GstOxiLlmState GstOxiLlmState;

struct _GstOxiLlm {
  GstElement parent;

  GstPad* sinkpad;
  GstPad* srcpad;

  /* properties, protected by the object lock */
  gchar* model;
  gchar* prompt_template;
  gchar* system_prompt;
  gfloat temperature;
  gint top_k;
  gfloat top_p;
  gfloat min_p;
  gfloat repeat_penalty;
  gint repeat_last_n;
  gfloat frequency_penalty;
  gfloat presence_penalty;
  gfloat typical_p;
  gfloat top_n_sigma;
  gfloat xtc_probability;
  gfloat xtc_threshold;
  gint mirostat;
  gfloat mirostat_tau;
  gfloat mirostat_eta;
  gchar* grammar;
  gchar* json_schema;
  gchar* logit_bias;
  gboolean ignore_eos;
  gchar* draft_model;
  gint draft_max;
  gfloat draft_p_min;
  gint64 seed;
  gint max_tokens;
  guint threads;
  gchar* quant;
  GstOxiLlmMode mode;
  gdouble interval; /* seconds of input media time; 0 = answer at EOS only */
  gchar* model_instance_id;
  guint context_size; /* positions; 0 = the model's training context, at most 4096 */
  GstOxiLlmCacheType cache_type;
  gchar* chat_template; /* a named fallback or a Jinja file; empty = the model's own */

  /* owned; its own mutex guards the queue, the rest belongs to the streaming thread or the
   * source pad task as documented there */
  GstOxiLlmState* state;
};

GST_ELEMENT_REGISTER_DECLARE(oxillm);

G_END_DECLS
