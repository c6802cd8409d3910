/* oxiwhisper's C++ state (GstOxiWhisperContext): the model and settings fixed at
 * READY->PAUSED, the queue from the streaming thread to the worker, and the worker's run, live
 * and VAD state. Internal to the plugin: gstoxiwhisper.cpp (the GObject adapter), whisper_worker
 * (the worker), whisper_live, whisper_vad_gate and whisper_file (its sessions) and
 * whisper_output (what they push) share it. */
#pragma once

#include <gst/gst.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backends/backend.h"
#include "elements/gstoxiwhisper.h"
#include "elements/live_stats.h"
#include "lib/vad/silero_vad_model.h"
#include "lib/vad/speech_segments.h"
#include "lib/vad/vad_stream.h"
#include "lib/whisper/encoder_batcher.h"
#include "lib/whisper/streaming_transcriber.h"
#include "lib/whisper/transcriber.h"
#include "lib/whisper/whisper_model.h"

GST_DEBUG_CATEGORY_EXTERN(gst_oxi_whisper_debug);

struct OxiEventUnref {
  void operator()(GstEvent* e) const { gst_event_unref(e); }
};
using OxiEventPtr = std::unique_ptr<GstEvent, OxiEventUnref>;

// What the chain function and the sink event handler hand to the worker, in stream order.
struct OxiWhisperQueueItem {
  enum class Kind { samples, discont, event } kind = Kind::samples;
  std::vector<float> samples;
  GstClockTime pts = GST_CLOCK_TIME_NONE;  // of the first sample
  OxiEventPtr event;
};

// The settings a stream runs with, read from the properties at READY->PAUSED.
struct OxiWhisperSettings {
  std::string language = "auto";  // Whisper's code ("en") or "auto"
  bool translate = false;
  bool word_timestamps = false;
  std::string initial_prompt;
  guint latency_ms = 0;
  GstOxiWhisperMode mode = GST_OXI_WHISPER_MODE_AUTO;
  GstOxiWhisperKvCache kv_cache = GST_OXI_WHISPER_KV_CACHE_AUTO;
  bool encode_audio_only = true;
  bool condition_on_previous_text = true;
  guint stats_interval_ms = 0;
  float vad_threshold = 0.5f;
};

struct _GstOxiWhisperContext {
  // The model and its runner: set at READY->PAUSED, the model kept until READY->NULL.
  std::string model_key;
  std::shared_ptr<const oxi::whisper::WhisperModel> model;
  std::unique_ptr<oxi::backends::Backend> backend;
  int backend_threads = -1;
  std::unique_ptr<oxi::whisper::Transcriber> transcriber;
  // The model's encoder, shared with the other elements on the model (null: not shared).
  std::shared_ptr<const oxi::whisper::EncoderBatcher> encoder;
  OxiWhisperSettings settings;
  std::shared_ptr<const oxi::vad::SileroVadModel> vad_model;  // set: VAD gating in live mode

  // Between the streaming thread and the worker.
  std::mutex mutex;
  std::condition_variable cond;
  std::deque<OxiWhisperQueueItem> queue;
  bool stopping = false;
  bool busy = false;                        // the worker is handling items taken from the queue
  GstFlowReturn flow = GST_FLOW_OK;         // the first failed downstream push, returned by chain
  std::atomic<bool> cancel{false};          // stops the worker's decoding (flush, shutdown)
  std::atomic<bool> live{false};            // the stream's mode, decided at its first buffer
  std::atomic<uint64_t> queued_samples{0};  // audio in `queue`, part of the decoding backlog
  std::thread worker;

  // The live path's measurements (worker writes, get_property reads).
  std::mutex stats_mutex;
  LiveStats stats;

  // Streaming thread only.
  bool is_float = true;  // F32LE, else S16LE
  bool mode_decided = false;
  bool have_samples = false;
  GstClockTime next_pts = GST_CLOCK_TIME_NONE;

  // Worker only. A run is a stretch of contiguous samples; its times count from run_start.
  GstSegment segment;
  bool run_active = false;
  bool run_live = false;
  GstClockTime run_start = 0;
  uint64_t run_samples = 0;
  std::vector<float> file_samples;
  std::unique_ptr<oxi::whisper::TranscriberStreamDecoder> decoder;
  std::unique_ptr<oxi::whisper::StreamDecoder> metered;  // `decoder`, counted and timed
  std::unique_ptr<oxi::whisper::StreamingTranscriber> stream;
  GstClockTime pushed_until = GST_CLOCK_TIME_NONE;  // end of the text and gaps pushed so far
  uint64_t next_stats_samples = 0;                  // stats.audio_samples of the next message
  bool qos_warned = false;                          // the falling-behind warning was posted
  std::deque<double> pass_overheads;  // the last passes': running time of the push - audio end

  // Worker only: VAD gating of a live run. `held` are the run's samples from `held_start` on
  // that the decoder has not been given (the pre-roll, and the last partial VAD window).
  bool run_vad = false;
  std::unique_ptr<oxi::vad::VadStream> vad;
  std::unique_ptr<oxi::vad::SpeechSegmenter> segmenter;
  std::vector<float> held;
  uint64_t held_start = 0;
  uint64_t judged_end = 0;     // run samples the VAD has judged
  bool speaking = false;       // speech goes to the decoder
  uint64_t quiet_samples = 0;  // non-speech since the last speech window, while speaking

  // Worker only: the unsynced_src pad's stream.
  bool unsynced_started = false;
  guint group_id = 0;
  bool have_group_id = false;
};
