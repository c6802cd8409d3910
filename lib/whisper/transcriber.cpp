#include "lib/whisper/transcriber.h"

#include <algorithm>
#include <cmath>

#include <spdlog/spdlog.h>

#include "lib/core/error.h"
#include "lib/core/free_memory.h"
#include "lib/whisper/decoding.h"
#include "lib/whisper/language_detection.h"
#include "lib/whisper/word_timestamps.h"

namespace oxi::whisper {
namespace {

constexpr double kFramesPerSecond = static_cast<double>(kMelSampleRate) / kMelHop;  // 100

bool is_blank(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; });
}

uint64_t window_seed(uint64_t seed, size_t seek) {
  return seed ^ (0x9E3779B97F4A7C15ull * (static_cast<uint64_t>(seek) + 1));
}

bool cancelled(const std::atomic<bool>* cancel) {
  return cancel && cancel->load(std::memory_order_relaxed);
}

}  // namespace

bool uses_language_tokens(const WhisperModel& model) {
  const WhisperVocab& v = model.vocab();
  return !v.languages.empty() && (model.config().multilingual || v.languages.size() < 99);
}

Transcriber::Transcriber(std::shared_ptr<const WhisperModel> model, backends::Backend& backend)
    : model_(std::move(model)), backend_(backend) {
  if (!model_) throw Error("Transcriber", "no model");
  state_ = std::make_unique<WhisperState>(model_, backend_);
  const WhisperConfig& c = model_->config();
  const std::span<const float> filters = model_->mel_filters();
  mel_ = filters.empty() ? std::make_unique<LogMelSpectrogram>(c.n_mels)
                         : std::make_unique<LogMelSpectrogram>(
                               c.n_mels, std::vector<float>(filters.begin(), filters.end()));
}

Transcriber::~Transcriber() = default;

void Transcriber::release_working_memory() {
  state_->release_working_memory();
  backend_.release_scratch();
  return_free_memory();
}

// openai's log_mel_spectrogram(audio, padding=N_SAMPLES): the whole audio with one window of
// zeros after it, so the clamp uses the whole file's maximum.
LogMel Transcriber::whole_mel(std::span<const float> samples) const {
  const size_t pad = samples.size() + static_cast<size_t>(model_->config().n_samples);
  return mel_->compute(samples, pad, std::max(1, backend_.threads()));
}

// The window's features: mel[:, seek : seek + n_frames] of the whole padded log-mel, so frames
// after the audio are the log-mel of silence, as the model saw them in training (the feature
// extractor pads the audio). openai's transcribe() instead zero-fills the mel after
// segment_size; with the padding the decoder reproduces torch references of models trained
// on padded audio exactly (examples/demo-asr), and OpenAI's models see their training input.
void Transcriber::encode_window(const LogMel& mel, size_t seek, size_t segment_size,
                                bool audio_only) {
  const WhisperConfig& c = model_->config();
  const size_t n_frames = static_cast<size_t>(c.n_frames);
  const size_t width =
      audio_only ? std::min(n_frames, std::max<size_t>(2, (segment_size + 1) / 2 * 2)) : n_frames;
  std::vector<float> window(static_cast<size_t>(c.n_mels) * width, 0.0f);
  const size_t take = std::min(width, mel.n_frames - std::min(seek, mel.n_frames));
  for (int m = 0; m < c.n_mels; ++m)
    std::copy_n(mel.data.begin() + static_cast<ptrdiff_t>(m * mel.n_frames + seek), take,
                window.begin() + static_cast<ptrdiff_t>(m * width));
  state_->encode(window, width);
}

int32_t Transcriber::language_token(const std::string& code) const {
  if (!uses_language_tokens(*model_)) return -1;
  const std::optional<int32_t> id = model_->vocab().language_token(code);
  if (!id) throw Error(model_->path().string(), "the model has no language '" + code + "'");
  return *id;
}

WindowResult Transcriber::run_window(size_t seek, size_t segment_size, const WindowOptions& o,
                                     int32_t lang_token) {
  const WhisperConfig& c = model_->config();
  const WhisperVocab& v = model_->vocab();
  const double time_precision =
      static_cast<double>(c.n_frames) / c.n_audio_ctx / kFramesPerSecond;       // 0.02 s
  const size_t input_stride = static_cast<size_t>(c.n_frames / c.n_audio_ctx);  // mel frames
  const double time_offset = o.time_offset;

  DecodingOptions d;
  d.sot_sequence = sot_sequence(*model_, lang_token, o.translate);
  d.timestamps = o.timestamps;
  d.prompt = o.prompt_tokens;
  d.sample_len = o.max_tokens;
  FallbackOptions f{o.temperatures, o.compression_ratio_threshold, o.logprob_threshold,
                    o.no_speech_threshold};
  const DecodingResult r = decode_with_fallback(*state_, d, f, window_seed(o.seed, seek), o.cancel);

  WindowResult out;
  out.tokens = r.tokens;
  out.ended = r.ended;
  out.avg_logprob = r.avg_logprob;
  out.no_speech_prob = r.no_speech_prob;
  out.temperature = r.temperature;
  out.compression_ratio = r.compression_ratio;
  out.cancelled = r.cancelled;
  if (r.cancelled) return out;

  size_t consumed = segment_size;
  const bool logprob_check = std::isfinite(o.logprob_threshold) && o.logprob_threshold > -1e9f;
  if (o.no_speech_threshold > 0.0f && r.no_speech_prob > o.no_speech_threshold &&
      !(logprob_check && r.avg_logprob > o.logprob_threshold)) {
    out.skipped_as_silence = true;
    out.consumed_samples = consumed * kMelHop;
    return out;
  }

  // Cut the tokens into segments at each pair of consecutive timestamps.
  const std::vector<int32_t>& tokens = r.tokens;
  const auto is_ts = [&](size_t i) { return v.is_timestamp(tokens[i]); };
  const size_t n = tokens.size();
  const bool single_timestamp_ending = n >= 2 && !is_ts(n - 2) && is_ts(n - 1);
  std::vector<size_t> slices;
  for (size_t i = 1; i < n; ++i)
    if (is_ts(i - 1) && is_ts(i)) slices.push_back(i);
  std::vector<DecodedSegment> segments;
  const auto add_segment = [&](size_t begin, size_t end, double t0, double t1) {
    DecodedSegment s;
    s.tokens.assign(tokens.begin() + static_cast<ptrdiff_t>(begin),
                    tokens.begin() + static_cast<ptrdiff_t>(end));
    s.segment.t0 = t0;
    s.segment.t1 = t1;
    s.segment.text = model_->decode_text(s.tokens);
    segments.push_back(std::move(s));
  };
  if (!slices.empty()) {
    if (single_timestamp_ending) slices.push_back(n);
    size_t last = 0;
    for (size_t cut : slices) {
      const double start = (tokens[last] - v.timestamp_begin) * time_precision;
      const double end = (tokens[cut - 1] - v.timestamp_begin) * time_precision;
      add_segment(last, cut, time_offset + start, time_offset + end);
      last = cut;
    }
    if (!single_timestamp_ending)
      consumed = static_cast<size_t>(tokens[last - 1] - v.timestamp_begin) * input_stride;
  } else {
    double duration = static_cast<double>(segment_size) / kFramesPerSecond;
    int32_t last_ts = -1;
    for (int32_t t : tokens)
      if (v.is_timestamp(t)) last_ts = t;
    if (last_ts >= 0 && last_ts != v.timestamp_begin)
      duration = (last_ts - v.timestamp_begin) * time_precision;
    add_segment(0, n, time_offset, time_offset + duration);
  }

  if (o.word_timestamps && !segments.empty()) {
    std::vector<Segment> plain;
    std::vector<std::vector<int32_t>> seg_tokens;
    for (const DecodedSegment& s : segments) {
      plain.push_back(s.segment);
      seg_tokens.push_back(s.tokens);
    }
    const std::string language(lang_token >= 0 ? *v.language_of(lang_token) : "en");
    add_word_timestamps(*state_, d.sot_sequence, plain, seg_tokens, segment_size, time_offset,
                        language, last_speech_timestamp_);
    for (size_t i = 0; i < segments.size(); ++i) segments[i].segment = std::move(plain[i]);
    // openai re-decodes from the last word's end (a word may be cut at the window's end);
    // only a full window can cut one, so a window holding the end of the audio is done
    // (re-decoding its tail made models repeat themselves).
    if (!single_timestamp_ending && segment_size >= static_cast<size_t>(c.n_frames)) {
      double last_word_end = -1.0;
      for (const DecodedSegment& s : segments)
        if (!s.segment.words.empty()) last_word_end = s.segment.words.back().end;
      if (last_word_end > time_offset)  // openai: seek = round(last_word_end * 100)
        consumed =
            static_cast<size_t>(std::llround((last_word_end - time_offset) * kFramesPerSecond));
    }
  }
  // Never past the audio of this window, and always forward.
  if (consumed == 0 || consumed > segment_size) consumed = segment_size;

  for (DecodedSegment& s : segments)
    if (s.segment.t0 != s.segment.t1 && !is_blank(s.segment.text))
      out.segments.push_back(std::move(s));
  out.consumed_samples = consumed * kMelHop;
  return out;
}

Transcript Transcriber::transcribe(std::span<const float> samples_16k,
                                   const TranscribeOptions& options,
                                   const std::function<void(double)>& progress,
                                   const std::atomic<bool>* cancel) {
  const WhisperConfig& c = model_->config();
  const size_t n_frames = static_cast<size_t>(c.n_frames);
  Transcript transcript;
  last_speech_timestamp_ = 0.0;
  const LogMel mel = whole_mel(samples_16k);
  const size_t content_frames = mel.n_frames > n_frames ? mel.n_frames - n_frames : 0;

  // The language: given, detected on the first window, or the only one the model knows.
  int32_t lang_token = -1;
  if (!uses_language_tokens(*model_)) {
    transcript.language = "en";
    transcript.language_probability = 1.0f;
    if (options.language != "auto" && options.language != "en" && !options.language.empty())
      spdlog::warn("{}: English-only model, ignoring language '{}'", model_->path().string(),
                   options.language);
  } else if (options.language == "auto" || options.language.empty()) {
    if (content_frames == 0) return transcript;
    encode_window(mel, 0, n_frames, false);  // mel[:, :N_FRAMES], as openai detects
    const LanguageResult lr = oxi::whisper::detect_language(*state_);
    transcript.language = lr.language;
    transcript.language_probability = lr.probability;
    lang_token = lr.token;
  } else {
    lang_token = language_token(options.language);
    transcript.language = options.language;
    transcript.language_probability = 1.0f;
  }

  WindowOptions w;
  w.language = transcript.language;
  w.translate = options.translate;
  w.timestamps = options.timestamps;
  w.word_timestamps = options.word_timestamps;
  w.temperatures = options.temperatures;
  w.compression_ratio_threshold = options.compression_ratio_threshold;
  w.logprob_threshold = options.logprob_threshold;
  w.no_speech_threshold = options.no_speech_threshold;
  w.max_tokens = options.max_tokens_per_window;
  w.seed = options.seed;
  w.cancel = cancel;

  std::vector<int32_t> all_tokens;
  if (!options.initial_prompt.empty()) {
    std::string_view p = options.initial_prompt;
    while (!p.empty() && std::isspace(static_cast<unsigned char>(p.front()))) p.remove_prefix(1);
    while (!p.empty() && std::isspace(static_cast<unsigned char>(p.back()))) p.remove_suffix(1);
    all_tokens = model_->encode_text(" " + std::string(p));
  }
  size_t prompt_reset_since = 0;
  size_t seek = 0;
  while (seek < content_frames) {
    if (cancelled(cancel)) break;
    const size_t segment_size = std::min(n_frames, content_frames - seek);
    w.time_offset = static_cast<double>(seek) / kFramesPerSecond;
    w.prompt_tokens.assign(all_tokens.begin() + static_cast<ptrdiff_t>(prompt_reset_since),
                           all_tokens.end());
    encode_window(mel, seek, segment_size, false);
    WindowResult r = run_window(seek, segment_size, w, lang_token);
    r.language = transcript.language;
    r.language_probability = transcript.language_probability;
    if (r.cancelled) break;
    if (window_callback_) window_callback_(r);
    seek += r.consumed_samples / kMelHop;
    for (DecodedSegment& s : r.segments) {
      all_tokens.insert(all_tokens.end(), s.tokens.begin(), s.tokens.end());
      transcript.segments.push_back(std::move(s.segment));
    }
    if (!options.condition_on_previous_text || r.temperature > 0.5f)
      prompt_reset_since = all_tokens.size();
    if (progress) progress(std::min(1.0, static_cast<double>(seek) / content_frames));
  }
  return transcript;
}

WindowResult Transcriber::decode_window(std::span<const float> samples_16k,
                                        const WindowOptions& options) {
  const WhisperConfig& c = model_->config();
  if (samples_16k.size() > static_cast<size_t>(c.n_samples))
    throw Error("decode_window", std::to_string(samples_16k.size()) +
                                     " samples are more than the model's window of " +
                                     std::to_string(c.n_samples));
  WindowResult empty;
  if (samples_16k.size() < kMelHop) return empty;
  if (cancelled(options.cancel)) {
    empty.cancelled = true;
    return empty;
  }
  const LogMel mel = whole_mel(samples_16k);
  const size_t n_frames = static_cast<size_t>(c.n_frames);
  const size_t content_frames = std::min(n_frames, mel.n_frames - n_frames);
  encode_window(mel, 0, content_frames, options.encode_audio_only);

  int32_t lang_token = -1;
  std::string language = "en";
  float language_probability = 1.0f;
  if (uses_language_tokens(*model_)) {
    if (options.language == "auto" || options.language.empty()) {
      const LanguageResult lr = oxi::whisper::detect_language(*state_);
      lang_token = lr.token;
      language = lr.language;
      language_probability = lr.probability;
    } else {
      lang_token = language_token(options.language);
      language = options.language;
    }
  }
  WindowResult r = run_window(0, content_frames, options, lang_token);
  r.language = language;
  r.language_probability = language_probability;
  if (!r.cancelled && window_callback_) window_callback_(r);
  return r;
}

LanguageResult Transcriber::detect_language(std::span<const float> samples_16k) {
  if (model_->vocab().languages.empty()) return {};
  const LogMel mel = whole_mel(samples_16k);
  encode_window(mel, 0, static_cast<size_t>(model_->config().n_frames), false);
  return oxi::whisper::detect_language(*state_);
}

LogMel Transcriber::first_window_mel(std::span<const float> samples_16k) const {
  const WhisperConfig& c = model_->config();
  const LogMel mel = whole_mel(samples_16k);
  const size_t n_frames = static_cast<size_t>(c.n_frames);
  LogMel out;
  out.n_mels = c.n_mels;
  out.n_frames = n_frames;
  out.data.resize(static_cast<size_t>(c.n_mels) * n_frames);
  for (int m = 0; m < c.n_mels; ++m)
    std::copy_n(mel.data.begin() + static_cast<ptrdiff_t>(m * mel.n_frames), n_frames,
                out.data.begin() + static_cast<ptrdiff_t>(m * n_frames));
  return out;
}

std::vector<float> Transcriber::first_step_logits(std::span<const float> samples_16k,
                                                  const std::string& language) {
  const WhisperConfig& c = model_->config();
  const WhisperVocab& v = model_->vocab();
  const LogMel mel = whole_mel(samples_16k);
  const size_t n_frames = static_cast<size_t>(c.n_frames);
  encode_window(mel, 0, std::min(n_frames, mel.n_frames - n_frames), false);
  std::vector<int32_t> prompt = {v.sot};
  if (!v.languages.empty()) {
    const std::string code = language.empty() || language == "auto" ? "en" : language;
    const std::optional<int32_t> id = v.language_token(code);
    if (!id && code != "en")
      throw Error(model_->path().string(), "the model has no language '" + code + "'");
    prompt.push_back(id ? *id : v.languages.front().second);
  }
  if (v.transcribe >= 0) prompt.push_back(v.transcribe);
  if (v.no_timestamps >= 0) prompt.push_back(v.no_timestamps);
  const std::span<const float> logits = state_->decode(prompt, 0);
  return {logits.begin(), logits.end()};
}

}  // namespace oxi::whisper
