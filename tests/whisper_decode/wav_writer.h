// Test audio for the decoding tests: speech-like generated samples and a 16-bit WAV writer.
#pragma once

#include <filesystem>
#include <vector>

namespace oxi::whisper::test {

// Voiced harmonics with a moving pitch and syllable-rate amplitude, deterministic.
std::vector<float> speech_like(double seconds, unsigned seed = 1);

// 16 kHz mono s16le RIFF/WAVE.
void write_wav16(const std::filesystem::path& file, const std::vector<float>& samples);

}  // namespace oxi::whisper::test
