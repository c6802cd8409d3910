// Session::save_state / load_state. File layout (little-endian):
//   "OXISTATE" | u32 version (2) | u32 n_layer | u32 kv_dim | u32 n_vocab | u32 cache type
//   | u64 n_past | i32 tokens[n_past]
//   | for each layer: keys[n_past][kv_dim], values[n_past][kv_dim] of the cache type
// The cache type is a GGML type id (0 f32, 1 f16). Version 1 files had no type field and an
// f32 cache. Only the rows in use are stored; the restored cache holds the very same elements.
#include <bit>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "lib/core/error.h"
#include "lib/llm/forward.h"
#include "lib/llm/session.h"

namespace oxi::llm {
namespace {

static_assert(std::endian::native == std::endian::little, "state files are little-endian");

constexpr char kMagic[8] = {'O', 'X', 'I', 'S', 'T', 'A', 'T', 'E'};
constexpr uint32_t kVersion = 2;

struct Header {
  uint32_t version, n_layer, kv_dim, n_vocab, cache_type;
  uint64_t n_past;
};

// The header of a state of `cache`'s first n_past positions.
Header header_of(const KvCache& cache, int n_vocab, size_t n_past) {
  return {kVersion,
          static_cast<uint32_t>(cache.n_layer()),
          static_cast<uint32_t>(cache.kv_dim()),
          static_cast<uint32_t>(n_vocab),
          static_cast<uint32_t>(cache.type()),
          n_past};
}

// Throws (naming `context`) unless a state with header h fits `cache`, of a model of n_vocab
// tokens: the same shape, cache type and at most its positions.
void check_state_fits(const Header& h, const KvCache& cache, int n_vocab,
                      const std::string& context) {
  if (h.n_layer != cache.n_layer() || h.kv_dim != cache.kv_dim() ||
      h.n_vocab != static_cast<uint32_t>(n_vocab))
    throw Error(context, "state of another model (layers " + std::to_string(h.n_layer) +
                             ", kv_dim " + std::to_string(h.kv_dim) + ", vocab " +
                             std::to_string(h.n_vocab) + ")");
  if (h.cache_type != static_cast<uint32_t>(cache.type())) {
    const auto type = static_cast<kernels::DType>(h.cache_type);
    const bool known = type == kernels::DType::F16 || type == kernels::DType::F32;
    throw Error(context, "state of a cache of " +
                             (known ? std::string(kernels::name(type))
                                    : "unknown type " + std::to_string(h.cache_type)) +
                             " elements; this session's cache is " +
                             std::string(kernels::name(cache.type())) +
                             (known ? " (load it into a session of the same cache type)" : ""));
  }
  if (h.n_past > cache.n_ctx())
    throw Error(context, "state holds " + std::to_string(h.n_past) +
                             " positions, more than this session's n_ctx " +
                             std::to_string(cache.n_ctx()));
}

template <class T>
void write_raw(std::ofstream& out, const T* data, size_t count) {
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(count * sizeof(T)));
}

template <class T>
void read_raw(std::ifstream& in, T* data, size_t count, const std::string& context) {
  in.read(reinterpret_cast<char*>(data), static_cast<std::streamsize>(count * sizeof(T)));
  if (!in) throw Error(context, "state file is truncated");
}

}  // namespace

void Session::save_state(const std::filesystem::path& file) const {
  const std::string context = file.string();
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  if (!out) throw Error(context, "cannot open for writing");
  const KvCache& cache = state_->cache;
  const Header h = header_of(cache, model_->config().n_vocab, n_past());
  out.write(kMagic, sizeof kMagic);
  write_raw(out, &h.version, 1);
  write_raw(out, &h.n_layer, 1);
  write_raw(out, &h.kv_dim, 1);
  write_raw(out, &h.n_vocab, 1);
  write_raw(out, &h.cache_type, 1);
  write_raw(out, &h.n_past, 1);
  write_raw(out, tokens_.data(), tokens_.size());
  // Each layer's keys, then its values, position after position (KvCache::copy_rows_out).
  std::vector<uint8_t> keys(cache.rows_bytes(n_past())), values(keys.size());
  for (size_t il = 0; il < cache.n_layer(); ++il) {
    cache.copy_rows_out(il, n_past(), keys, values);
    write_raw(out, keys.data(), keys.size());
    write_raw(out, values.data(), values.size());
  }
  out.flush();
  if (!out) throw Error(context, "write failed");
}

void Session::load_state(const std::filesystem::path& file) {
  const std::string context = file.string();
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(context, "cannot open");
  char magic[sizeof kMagic];
  read_raw(in, magic, sizeof magic, context);
  if (std::memcmp(magic, kMagic, sizeof kMagic) != 0)
    throw Error(context, "not an oxinfer session state file");
  Header h{};
  read_raw(in, &h.version, 1, context);
  if (h.version != 1 && h.version != kVersion)
    throw Error(context, "state version " + std::to_string(h.version) + ", expected " +
                             std::to_string(kVersion) + " (or 1)");
  read_raw(in, &h.n_layer, 1, context);
  read_raw(in, &h.kv_dim, 1, context);
  read_raw(in, &h.n_vocab, 1, context);
  h.cache_type = static_cast<uint32_t>(kernels::DType::F32);
  if (h.version >= 2) read_raw(in, &h.cache_type, 1, context);
  read_raw(in, &h.n_past, 1, context);
  KvCache& cache = state_->cache;
  check_state_fits(h, cache, model_->config().n_vocab, context);
  std::vector<int32_t> tokens(h.n_past);
  read_raw(in, tokens.data(), tokens.size(), context);
  for (int32_t t : tokens)  // the sampler's penalties index the logits by these
    if (t < 0 || t >= model_->config().n_vocab)
      throw Error(context, "state holds token id " + std::to_string(t) +
                               ", outside the vocabulary of " +
                               std::to_string(model_->config().n_vocab));
  // Everything checked but the cache rows: the file must hold them (the engine appends its own
  // data after them), so that a short file fails before the cache is overwritten.
  const size_t cache_bytes = cache.n_layer() * 2 * cache.rows_bytes(h.n_past);
  const std::streamoff at = in.tellg();
  in.seekg(0, std::ios::end);
  if (in.tellg() - at < static_cast<std::streamoff>(cache_bytes))
    throw Error(context, "state file is truncated: " + std::to_string(in.tellg() - at) +
                             " bytes of cache rows, expected " + std::to_string(cache_bytes));
  in.seekg(at);
  // From here a failure (an I/O error) leaves rows of the file in the cache: the session is
  // emptied rather than left with tokens that do not match its cache.
  try {
    std::vector<uint8_t> keys(cache.rows_bytes(h.n_past)), values(keys.size());
    for (size_t il = 0; il < cache.n_layer(); ++il) {
      read_raw(in, keys.data(), keys.size(), context);
      read_raw(in, values.data(), values.size(), context);
      cache.copy_rows_in(il, h.n_past, keys, values);
    }
  } catch (const Error&) {
    tokens_.clear();
    throw;
  }
  tokens_ = std::move(tokens);
}

void Session::copy_context(const Session& from) {
  const KvCache& source = from.state_->cache;
  KvCache& cache = state_->cache;
  check_state_fits(header_of(source, from.model_->config().n_vocab, from.n_past()), cache,
                   model_->config().n_vocab, "llm session (copying a context)");
  const size_t n = from.n_past();
  // The same rows save_state writes and load_state stores, a layer at a time.
  std::vector<uint8_t> keys(cache.rows_bytes(n)), values(keys.size());
  for (size_t il = 0; il < cache.n_layer(); ++il) {
    source.copy_rows_out(il, n, keys, values);
    cache.copy_rows_in(il, n, keys, values);
  }
  tokens_ = from.tokens_;
  all_logits_.clear();
}

}  // namespace oxi::llm
