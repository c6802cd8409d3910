#include "lib/formats/whisper_ggml.h"

#include <cstdio>
#include <cstring>

#include "lib/core/error.h"
#include "lib/formats/byte_cursor.h"
#include "lib/formats/ggml_types.h"

namespace oxi::whisper_ggml {
namespace {

// Limits far above any real model that stop a corrupted count from allocating the machine away.
constexpr int32_t kMaxHParam = 1 << 20;
constexpr int32_t kMaxMelFilterValues = 1 << 20;
constexpr int32_t kMaxTokens = 1 << 22;
constexpr uint32_t kMaxTokenBytes = 1 << 16;
constexpr int32_t kMaxTensorNameBytes = 1 << 12;
constexpr int32_t kMaxDims = 4;  // ggml's GGML_MAX_DIMS

}  // namespace

Reader::Reader(const std::filesystem::path& path)
    : path_(path), file_(std::make_shared<const MappedFile>(path)) {
  const std::string context = path.string();
  formats::ByteCursor in(file_->bytes(), context);

  const auto magic = in.read<uint32_t>("magic");
  if (magic != kMagic) {
    throw Error(
        context, "not a whisper.cpp ggml model (magic 0x" + [&] {
          char buf[16];
          std::snprintf(buf, sizeof(buf), "%08x", magic);
          return std::string(buf);
        }() + ", expected 0x67676d6c)");
  }

  struct Field {
    const char* name;
    int32_t HParams::*member;
  };
  static constexpr Field kFields[] = {
      {"n_vocab", &HParams::n_vocab},
      {"n_audio_ctx", &HParams::n_audio_ctx},
      {"n_audio_state", &HParams::n_audio_state},
      {"n_audio_head", &HParams::n_audio_head},
      {"n_audio_layer", &HParams::n_audio_layer},
      {"n_text_ctx", &HParams::n_text_ctx},
      {"n_text_state", &HParams::n_text_state},
      {"n_text_head", &HParams::n_text_head},
      {"n_text_layer", &HParams::n_text_layer},
      {"n_mels", &HParams::n_mels},
      {"ftype", &HParams::ftype},
  };
  for (const Field& f : kFields) {
    const auto v = in.read<int32_t>(f.name);
    const bool ok = f.member == &HParams::ftype ? v >= 0 : v > 0 && v <= kMaxHParam;
    if (!ok) {
      throw Error(context,
                  std::string("implausible hyper-parameter ") + f.name + " = " + std::to_string(v));
    }
    hparams_.*f.member = v;
  }
  if (!formats::ggml_type_info(static_cast<uint32_t>(hparams_.weight_type()))) {
    throw Error(context, "unknown ggml ftype " + std::to_string(hparams_.ftype));
  }

  mel_filters_.n_mel = in.read<int32_t>("mel filter count");
  mel_filters_.n_fft = in.read<int32_t>("mel filter length");
  if (mel_filters_.n_mel <= 0 || mel_filters_.n_fft <= 0 ||
      mel_filters_.n_mel > kMaxMelFilterValues / mel_filters_.n_fft) {
    throw Error(context, "implausible mel filterbank size " + std::to_string(mel_filters_.n_mel) +
                             " x " + std::to_string(mel_filters_.n_fft));
  }
  const size_t n_mel_values = static_cast<size_t>(mel_filters_.n_mel) * mel_filters_.n_fft;
  mel_filters_.data.resize(n_mel_values);
  std::memcpy(mel_filters_.data.data(), in.take(n_mel_values * sizeof(float), "mel filters").data(),
              n_mel_values * sizeof(float));

  const auto n_tokens = in.read<int32_t>("vocabulary size");
  if (n_tokens < 0 || n_tokens > kMaxTokens) {
    throw Error(context, "implausible vocabulary size " + std::to_string(n_tokens));
  }
  vocab_.reserve(static_cast<size_t>(n_tokens));
  for (int32_t i = 0; i < n_tokens; ++i) {
    const auto length = in.read<uint32_t>("token length");
    if (length > kMaxTokenBytes) {
      throw Error(context, "token " + std::to_string(i) + " has implausible length " +
                               std::to_string(length));
    }
    const auto bytes = in.take(length, "token bytes");
    vocab_.emplace_back(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }

  while (!in.remaining() == 0) {
    const size_t header_offset = in.pos();
    const auto n_dims = in.read<int32_t>("tensor dimension count");
    const auto name_length = in.read<int32_t>("tensor name length");
    const auto ttype = in.read<int32_t>("tensor type");
    if (n_dims < 1 || n_dims > kMaxDims) {
      throw Error(context, "tensor at offset " + std::to_string(header_offset) + " has " +
                               std::to_string(n_dims) + " dimensions (1-4 allowed)");
    }
    if (name_length <= 0 || name_length > kMaxTensorNameBytes) {
      throw Error(context, "tensor at offset " + std::to_string(header_offset) +
                               " has implausible name length " + std::to_string(name_length));
    }
    const auto info =
        ttype >= 0 ? formats::ggml_type_info(static_cast<uint32_t>(ttype)) : std::nullopt;
    if (!info) {
      throw Error(context,
                  "tensor at offset " + std::to_string(header_offset) +
                      " has unsupported ggml type " + std::to_string(ttype) + " (" +
                      std::string(formats::ggml_type_name_any(static_cast<uint32_t>(ttype))) + ")");
    }
    TensorView t;
    t.dtype = static_cast<kernels::DType>(ttype);
    std::vector<int64_t> ne(static_cast<size_t>(n_dims));
    size_t numel = 1;
    for (int64_t& d : ne) {
      const auto v = in.read<int32_t>("tensor shape");
      if (v <= 0) {
        throw Error(context, "tensor at offset " + std::to_string(header_offset) +
                                 " has dimension " + std::to_string(v));
      }
      d = v;
      // Stored data takes at least half a byte per element, so a tensor of more than twice the
      // file's size in elements cannot fit; checking that first also keeps the product exact.
      if (numel > 2 * file_->size() / static_cast<size_t>(v) + 1) {
        throw Error(context, "tensor at offset " + std::to_string(header_offset) +
                                 " is larger than the file");
      }
      numel *= static_cast<size_t>(v);
    }
    const auto name_bytes = in.take(static_cast<size_t>(name_length), "tensor name");
    t.name.assign(reinterpret_cast<const char*>(name_bytes.data()), name_bytes.size());
    if (ne[0] % static_cast<int64_t>(info->block_elems) != 0) {
      throw Error(context, "tensor '" + t.name + "': row length " + std::to_string(ne[0]) +
                               " is not a multiple of the " + std::string(info->name) +
                               " block size " + std::to_string(info->block_elems));
    }
    const size_t n_bytes = numel / info->block_elems * info->block_bytes;
    t.data = in.take(n_bytes, "data of tensor '" + t.name + "'");
    t.shape.assign(ne.rbegin(), ne.rend());
    if (tensor_index_.count(t.name)) throw Error(context, "duplicate tensor '" + t.name + "'");
    tensor_index_.emplace(t.name, tensors_.size());
    tensors_.push_back(std::move(t));
  }
}

const TensorView* Reader::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const TensorView& Reader::tensor(std::string_view name) const {
  if (const TensorView* t = find_tensor(name)) return *t;
  throw Error(path_.string(), "no tensor '" + std::string(name) + "'");
}

}  // namespace oxi::whisper_ggml
