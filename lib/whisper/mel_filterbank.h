// The mel filterbank of Whisper's feature extractor, computed rather than shipped: librosa's
// filters.mel(sr, n_fft, n_mels, fmin=0, fmax=sr/2, htk=False, norm="slaney"), i.e. the Slaney
// mel scale (linear below 1 kHz, logarithmic above) with triangles normalised to equal area.
// For (16000, 400, 80) and (16000, 400, 128) it reproduces openai-whisper's mel_filters.npz.
#pragma once

#include <vector>

namespace oxi::whisper {

// [n_mels, n_fft / 2 + 1] row-major, computed in double and rounded to float.
std::vector<float> mel_filterbank(int n_mels, int n_fft = 400, int sample_rate = 16000);

}  // namespace oxi::whisper
