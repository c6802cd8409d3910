// Transcriber: speech to text with a Whisper model, following openai-whisper's transcribe():
// the whole audio's log-mel (with one window of zero samples after it; a window's frames past
// the audio are that padding's log-mel, as in training, where openai's transcribe() would
// zero-fill them), sequential windows of the model's length, the language detected
// on the first window (or given), each window decoded with the temperature fallback, windows
// judged silent skipped, timestamp tokens cut into segments, and the next window starting at
// the end of the last complete segment. Optional word-level timestamps from cross-attention.
//
//   auto model = oxi::whisper::WhisperModel::load("whisper-tiny/");
//   auto backend = oxi::backends::make_cpu_backend();
//   oxi::whisper::Transcriber transcriber(model, *backend);
//   oxi::whisper::Transcript t = transcriber.transcribe(oxi::media::decode_audio_file("a.mp3"),
//   {}); std::cout << oxi::whisper::to_srt(t);
//
// Live streams call decode_window() on each chunk (at most one window of audio) with the text
// tokens of earlier chunks as the prompt, and commit the segments that end before
// WindowResult::consumed_samples.
//
// One Transcriber per stream and thread (it owns a WhisperState, and the Backend serves one
// caller at a time); the model may be shared. cancel may be set from any thread: it is checked
// between tokens and between windows, and the work done so far is returned.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "lib/whisper/language_detection.h"
#include "lib/whisper/log_mel.h"
#include "lib/whisper/transcript.h"
#include "lib/whisper/whisper_model.h"
#include "lib/whisper/whisper_state.h"

namespace oxi::whisper {

struct TranscribeOptions {
  std::string language = "auto";  // ISO code, or "auto": detected on the first window
  bool translate = false;         // <|translate|>: English text from any language
  bool timestamps = true;         // timestamp tokens (segments); false: <|notimestamps|>
  bool word_timestamps = false;   // Segment::words from cross-attention alignment
  // Tried in order while a window's result is too repetitive or too unlikely; openai's
  // default fallback is {0, 0.2, 0.4, 0.6, 0.8, 1.0}.
  std::vector<float> temperatures = {0.0f};
  float compression_ratio_threshold = 2.4f;  // > this: too repetitive; <= 0: off
  float logprob_threshold = -1.0f;           // average log-prob < this: failed; NaN: off
  float no_speech_threshold = 0.6f;          // P(<|nospeech|>) > this (and a low log-prob): skip
  std::string initial_prompt;                // text before the first window (<|startofprev|>)
  bool condition_on_previous_text = false;   // earlier windows' text as the next prompt
  int max_tokens_per_window = 0;             // 0: n_text_ctx / 2 (openai's sample_len)
  uint64_t seed = 0;                         // sampling at temperatures > 0
};

// decode_window(): one chunk of a stream.
struct WindowOptions {
  std::string language = "auto";  // "auto": detected on this chunk (multilingual models)
  bool translate = false;
  bool timestamps = true;
  bool word_timestamps = false;
  std::vector<float> temperatures = {0.0f};
  float compression_ratio_threshold = 2.4f;
  float logprob_threshold = -1.0f;
  float no_speech_threshold = 0.6f;
  std::vector<int32_t> prompt_tokens;  // text tokens of earlier chunks (after <|startofprev|>)
  int max_tokens = 0;                  // 0: n_text_ctx / 2
  uint64_t seed = 0;
  double time_offset = 0.0;  // seconds added to every time of the result
  // Run the encoder on the chunk's frames only instead of the zero-padded window: faster for
  // short chunks, but models trained on full windows only (OpenAI's) transcribe worse.
  bool encode_audio_only = false;
  const std::atomic<bool>* cancel = nullptr;
};

struct DecodedSegment {
  Segment segment;              // times include WindowOptions::time_offset
  std::vector<int32_t> tokens;  // its sampled tokens, timestamps included
};

struct WindowResult {
  std::vector<DecodedSegment> segments;  // blank segments left out
  std::vector<int32_t> tokens;           // every sampled token, <|endoftext|> left out
  bool ended = false;                    // <|endoftext|> was sampled
  std::string language;                  // the language used ("en")
  float language_probability = 0.0f;     // 1 when given
  float avg_logprob = 0.0f;
  float no_speech_prob = 0.0f;
  float temperature = 0.0f;  // of the accepted attempt
  double compression_ratio = 0.0;
  bool skipped_as_silence = false;  // no_speech_prob over its threshold: no segments
  bool cancelled = false;
  // Where the next window should start: after the last complete segment, or the whole chunk
  // when the last segment is open-ended (single timestamp) or there are no timestamps.
  size_t consumed_samples = 0;
};

class Transcriber {
 public:
  Transcriber(std::shared_ptr<const WhisperModel> model, backends::Backend& backend);
  ~Transcriber();

  // Encode through an encoder shared with other streams of the same model (which batches
  // their concurrent passes) instead of this transcriber's own. See WhisperState.
  void share_encoder(std::shared_ptr<const EncoderBatcher> encoder) {
    state_->share_encoder(std::move(encoder));
  }

  const WhisperModel& model() const { return *model_; }
  // The decoder's KV caches: F32 (default, the reference's arithmetic) or F16 (half the
  // memory per stream). See WhisperState::set_kv_cache.
  void set_kv_cache(kernels::DType type) { state_->set_kv_cache(type); }
  kernels::DType kv_cache() const { return state_->kv_cache(); }

  // Whole-file long-form transcription of 16 kHz mono samples. progress gets the share of the
  // audio done (0..1) after each window. Returns the segments decoded before a cancel.
  Transcript transcribe(std::span<const float> samples_16k, const TranscribeOptions& options,
                        const std::function<void(double progress)>& progress = {},
                        const std::atomic<bool>* cancel = nullptr);

  // One chunk of at most config().n_samples samples (longer input: oxi::Error). Word-timestamp
  // heuristics carry their last speech time from one call to the next.
  WindowResult decode_window(std::span<const float> samples_16k, const WindowOptions& options);

  // Forgets the stream decode_window() was following (the word-timing heuristics' last speech
  // time), so the transcriber, its working memory already in place, can serve a new stream.
  void reset_stream() { last_speech_timestamp_ = 0.0; }
  // Gives back the memory a window's pass works in (encoder and decoder buffers, caches, the
  // backend's scratch) and returns freed heap to the system, so that a live stream idling
  // between passes holds little more than its audio. The next pass allocates it again.
  void release_working_memory();
  // Language probabilities over the checkpoint's language tokens on the first window of
  // `samples_16k` (empty for models without language tokens).
  LanguageResult detect_language(std::span<const float> samples_16k);

  // Debug hooks (oxinfer transcribe --dump-mel / --dump-logits / --show-tokens):
  // the first window's log-mel as the encoder sees it (n_mels x n_frames; after the audio, the
  // log-mel of the zero padding, as the feature extractor computes it);
  LogMel first_window_mel(std::span<const float> samples_16k) const;
  // the raw logits (n_vocab, no filter applied) of the first step after <|startoftranscript|>
  // <|lang|> <|transcribe|> <|notimestamps|> (tokens the vocabulary lacks are left out;
  // language "auto" or empty: "en", else the first language token);
  std::vector<float> first_step_logits(std::span<const float> samples_16k,
                                       const std::string& language);
  // a callback after every decoded window of transcribe() / decode_window().
  void set_window_callback(std::function<void(const WindowResult&)> callback) {
    window_callback_ = std::move(callback);
  }

 private:
  LogMel whole_mel(std::span<const float> samples) const;
  void encode_window(const LogMel& mel, size_t seek, size_t segment_size, bool audio_only);
  int32_t language_token(const std::string& code) const;
  // Decodes the window encode_window() prepared (seek: its first mel frame, for the seed).
  WindowResult run_window(size_t seek, size_t segment_size, const WindowOptions& options,
                          int32_t language_token);

  std::shared_ptr<const WhisperModel> model_;
  backends::Backend& backend_;
  std::unique_ptr<WhisperState> state_;
  std::unique_ptr<LogMelSpectrogram> mel_;
  std::function<void(const WindowResult&)> window_callback_;
  double last_speech_timestamp_ = 0.0;
};

// True when the model's prompt carries <|lang|><|task|> after <|startoftranscript|>:
// multilingual models, and custom vocabularies with fewer language tokens than OpenAI's 99
// (trained with them). OpenAI's English-only models use <|startoftranscript|> alone.
bool uses_language_tokens(const WhisperModel& model);

}  // namespace oxi::whisper
