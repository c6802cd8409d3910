"""Whisper log-mel features, exactly as openai-whisper's log_mel_spectrogram.

numpy reference (float64 -> float32) and a batched torch version (same numbers
up to float32 rounding).
"""
import numpy as np

SR = 16000
N_FFT = 400
HOP = 160


def hz_to_mel(f):
    f = np.asanyarray(f, dtype=np.float64)
    f_sp = 200.0 / 3
    mels = f / f_sp
    min_log_hz = 1000.0
    min_log_mel = min_log_hz / f_sp
    logstep = np.log(6.4) / 27.0
    return np.where(f >= min_log_hz, min_log_mel + np.log(np.maximum(f, min_log_hz) / min_log_hz) / logstep, mels)


def mel_to_hz(m):
    m = np.asanyarray(m, dtype=np.float64)
    f_sp = 200.0 / 3
    freqs = f_sp * m
    min_log_hz = 1000.0
    min_log_mel = min_log_hz / f_sp
    logstep = np.log(6.4) / 27.0
    return np.where(m >= min_log_mel, min_log_hz * np.exp(logstep * (m - min_log_mel)), freqs)


def mel_filters(n_mels=80, sr=SR, n_fft=N_FFT):
    """librosa.filters.mel(sr, n_fft, n_mels, htk=False, norm='slaney') as float32."""
    fftfreqs = np.linspace(0, sr / 2, 1 + n_fft // 2)
    mel_f = mel_to_hz(np.linspace(hz_to_mel(0.0), hz_to_mel(sr / 2.0), n_mels + 2))
    fdiff = np.diff(mel_f)
    ramps = np.subtract.outer(mel_f, fftfreqs)
    w = np.zeros((n_mels, 1 + n_fft // 2), dtype=np.float64)
    for i in range(n_mels):
        lower = -ramps[i] / fdiff[i]
        upper = ramps[i + 2] / fdiff[i + 1]
        w[i] = np.maximum(0, np.minimum(lower, upper))
    enorm = 2.0 / (mel_f[2:n_mels + 2] - mel_f[:n_mels])
    w *= enorm[:, None]
    return w.astype(np.float32)


def check_mel_filters(path="/work/shared/data/whisper/mel_filters.npz"):
    ref = np.load(path)["mel_80"]
    mine = mel_filters(80)
    d = float(np.abs(ref.astype(np.float64) - mine.astype(np.float64)).max())
    assert d < 1e-6, f"mel filterbank differs from {path}: {d}"
    return d


def log_mel_np(audio, n_samples, n_mels=80):
    """audio: float array in [-1, 1] at 16 kHz -> (n_mels, n_samples // 160) float32."""
    x = np.zeros(n_samples, dtype=np.float64)
    a = np.asarray(audio, dtype=np.float64)[:n_samples]
    x[: len(a)] = a
    xp = np.pad(x, (N_FFT // 2, N_FFT // 2), mode="reflect")
    n_frames = 1 + (len(xp) - N_FFT) // HOP
    idx = np.arange(N_FFT)[None, :] + HOP * np.arange(n_frames)[:, None]
    win = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(N_FFT) / N_FFT)  # periodic Hann
    spec = np.fft.rfft(xp[idx] * win, axis=1)
    power = (np.abs(spec) ** 2)[:-1].T  # (201, n_frames - 1)
    mel = mel_filters(n_mels).astype(np.float64) @ power
    logm = np.log10(np.maximum(mel, 1e-10))
    logm = np.maximum(logm, logm.max() - 8.0)
    return ((logm + 4.0) / 4.0).astype(np.float32)


def log_mel_torch(batch, filters):
    """batch: (B, n_samples) float32 tensor, already zero padded -> (B, n_mels, frames)."""
    import torch
    win = torch.hann_window(N_FFT, periodic=True, dtype=batch.dtype)
    st = torch.stft(batch, N_FFT, HOP, window=win, center=True, pad_mode="reflect",
                    return_complex=True)
    power = st[..., :-1].abs() ** 2
    mel = filters @ power
    logm = torch.clamp(mel, min=1e-10).log10()
    mx = logm.amax(dim=(1, 2), keepdim=True)
    logm = torch.maximum(logm, mx - 8.0)
    return (logm + 4.0) / 4.0
