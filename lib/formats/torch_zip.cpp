// torch::Archive: locates <archive>/data.pkl, unpickles it with the restricted unpickler and
// resolves each tensor's storage to a range of its stored data/<key> entry.
#include "lib/formats/torch_zip.h"

#include <limits>

#include "lib/core/error.h"
#include "lib/formats/byte_cursor.h"
#include "lib/formats/ggml_types.h"

namespace oxi::torch {

namespace {

using K = pickle::Object::Kind;

struct StorageType {
  std::string_view name;
  std::optional<kernels::DType> dtype;
  std::string_view dtype_name;
  size_t elem_bytes;
};

constexpr StorageType kStorageTypes[] = {
    {"FloatStorage", kernels::DType::F32, "f32", 4},
    {"HalfStorage", kernels::DType::F16, "f16", 2},
    {"BFloat16Storage", kernels::DType::BF16, "bf16", 2},
    {"DoubleStorage", kernels::DType::F64, "f64", 8},
    {"LongStorage", kernels::DType::I64, "i64", 8},
    {"IntStorage", kernels::DType::I32, "i32", 4},
    {"ShortStorage", kernels::DType::I16, "i16", 2},
    {"CharStorage", kernels::DType::I8, "i8", 1},
    {"ByteStorage", std::nullopt, "u8", 1},
    {"BoolStorage", std::nullopt, "bool", 1},
};

const StorageType* find_storage_type(std::string_view name) {
  for (const StorageType& t : kStorageTypes) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

}  // namespace

Archive::Archive(const std::filesystem::path& path) : zip_(path) {
  load();
}

Archive::Archive(std::shared_ptr<const MappedFile> file) : zip_(std::move(file)) {
  load();
}

void Archive::load() {
  const zip::Entry* pkl = nullptr;
  for (const zip::Entry& e : zip_.entries()) {
    const size_t slash = e.name.find('/');
    if (slash != std::string::npos && slash > 0 && e.name.substr(slash) == "/data.pkl") {
      pkl = &e;
      prefix_ = e.name.substr(0, slash);
      break;
    }
  }
  if (!pkl) {
    throw Error(path().string(), "not a torch checkpoint (no <archive>/data.pkl in the zip)");
  }
  const std::vector<std::byte> pickle_bytes = zip_.read(*pkl);
  doc_ = pickle::unpickle(pickle_bytes, path().string() + ": " + pkl->name);
  collect(root(), "", 0);
}

void Archive::collect(const pickle::Object& o, const std::string& prefix, int depth) {
  // Nested dicts in checkpoints are shallow; the bound also stops cycles a hostile pickle builds.
  if (o.kind != K::Dict || depth > 16) return;
  for (const auto& [key, value] : o.entries) {
    if (key->kind != K::String) continue;
    std::string name = prefix.empty() ? key->text : prefix + "." + key->text;
    if (value->kind == K::Tensor) {
      if (!index_.emplace(name, tensors_.size()).second) {
        throw Error(path().string(), "duplicate tensor name '" + name + "'");
      }
      tensors_.push_back(entry_of(*value, std::move(name)));
    } else if (value->kind == K::Dict) {
      collect(*value, name, depth + 1);
    }
  }
}

formats::TensorEntry Archive::entry_of(const pickle::Object& t, std::string name) const {
  const std::string ctx = path().string();
  const std::string what = "tensor '" + name + "'";
  if (t.kind != K::Tensor || !t.storage) throw Error(ctx, what + " is not a tensor");
  const pickle::Object& storage = *t.storage;
  const StorageType* type = find_storage_type(storage.storage_type);
  if (!type) throw Error(ctx, what + " has unsupported storage type " + storage.storage_type);

  formats::TensorEntry e;
  e.name = std::move(name);
  e.dtype = type->dtype;
  e.dtype_name = std::string(type->dtype_name);
  e.shape = t.size;

  const std::string entry_name = prefix_ + "/data/" + storage.storage_key;
  const auto bytes = zip_.stored(zip_.entry(entry_name));
  uint64_t storage_bytes;
  if (formats::mul_overflows(static_cast<uint64_t>(storage.storage_numel), type->elem_bytes,
                             &storage_bytes) ||
      storage_bytes > bytes.size()) {
    throw Error(ctx, what + ": storage " + entry_name + " has " + std::to_string(bytes.size()) +
                         " bytes, fewer than its " + std::to_string(storage.storage_numel) +
                         " elements need");
  }
  uint64_t numel = 1;
  for (int64_t d : t.size) {
    if (d < 0 || formats::mul_overflows(numel, static_cast<uint64_t>(d), &numel)) {
      throw Error(ctx, what + " has an invalid shape");
    }
  }
  if (t.storage_offset < 0) throw Error(ctx, what + " has a negative storage offset");
  uint64_t end, nbytes;
  if (formats::add_overflows(static_cast<uint64_t>(t.storage_offset), numel, &end) ||
      formats::mul_overflows(numel, type->elem_bytes, &nbytes)) {
    throw Error(ctx, what + " has a size that overflows");
  }
  e.nbytes = nbytes;

  // Row-major contiguity; the stride of a dimension of size 1 does not matter.
  bool contiguous = true;
  int64_t expected = 1;
  for (size_t d = t.size.size(); d-- > 0;) {
    if (t.size[d] != 1 && t.stride[d] != expected) contiguous = false;
    expected *= t.size[d] ? t.size[d] : 1;
  }
  if (!type->dtype) {
    e.problem = "dtype " + e.dtype_name + " (" + storage.storage_type + ") is not supported";
  } else if (numel > 0 && !contiguous) {
    e.problem = "is not contiguous (a strided view); save it with .contiguous()";
  } else if (numel > 0 && end > static_cast<uint64_t>(storage.storage_numel)) {
    throw Error(ctx, what + " extends past the end of its storage " + entry_name);
  } else if (numel > 0) {
    e.data = bytes.subspan(static_cast<size_t>(t.storage_offset) * type->elem_bytes, nbytes);
  }
  return e;
}

const formats::TensorEntry* Archive::find_tensor(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

TensorView Archive::tensor(std::string_view name) const {
  const formats::TensorEntry* e = find_tensor(name);
  if (!e) throw Error(path().string(), "tensor '" + std::string(name) + "' not found");
  return e->view(path().string());
}

std::string_view storage_type_name(kernels::DType dtype) {
  for (const StorageType& t : kStorageTypes) {
    if (t.dtype == dtype) return t.name;
  }
  throw Error("torch writer", "dtype " + std::string(formats::ggml_type_info(dtype).name) +
                                  " has no torch storage type");
}

}  // namespace oxi::torch
