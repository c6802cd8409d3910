#include "elements/whisper_file.h"

#include "elements/whisper_output.h"

void gst_oxi_whisper_file_end(GstOxiWhisper* self) {
  GstOxiWhisperContext* c = self->ctx;
  const OxiWhisperSettings& s = c->settings;
  // `oxinfer transcribe --timestamps`'s options: the element's text equals the CLI's.
  oxi::whisper::TranscribeOptions o;
  o.language = s.language;
  o.translate = s.translate;
  o.word_timestamps = s.word_timestamps;
  o.initial_prompt = s.initial_prompt;
  const oxi::whisper::Transcript t = c->transcriber->transcribe(c->file_samples, o, {}, &c->cancel);
  c->file_samples.clear();
  c->file_samples.shrink_to_fit();
  if (c->cancel) return;
  for (const oxi::whisper::Segment& seg : t.segments) {
    if (s.word_timestamps) {
      for (const oxi::whisper::Word& w : seg.words)
        gst_oxi_whisper_push_text(self, w.word, w.start, w.end, false);
    } else {
      gst_oxi_whisper_push_text(self, seg.text, seg.t0, seg.t1, false);
    }
  }
}
