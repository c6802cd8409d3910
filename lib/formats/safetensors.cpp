// safetensors::File (reader) and safetensors::Writer.
#include "lib/formats/safetensors.h"
#include "lib/core/ascii.h"
#include "lib/formats/file_io.h"

#include <cstring>

#include <nlohmann/json.hpp>

#include "lib/core/error.h"
#include "lib/formats/byte_cursor.h"
#include "lib/formats/ggml_types.h"

namespace oxi::safetensors {

namespace {

using Json = nlohmann::ordered_json;

struct DTypeRow {
  std::string_view name;
  size_t elem_bytes;
  std::optional<kernels::DType> dtype;
};

constexpr DTypeRow kDTypes[] = {
    {"F32", 4, kernels::DType::F32},   {"F16", 2, kernels::DType::F16},
    {"BF16", 2, kernels::DType::BF16}, {"F64", 8, kernels::DType::F64},
    {"I64", 8, kernels::DType::I64},   {"I32", 4, kernels::DType::I32},
    {"I16", 2, kernels::DType::I16},   {"I8", 1, kernels::DType::I8},
    {"U8", 1, std::nullopt},           {"BOOL", 1, std::nullopt},
    {"U16", 2, std::nullopt},          {"U32", 4, std::nullopt},
    {"U64", 8, std::nullopt},          {"F8_E4M3", 1, std::nullopt},
    {"F8_E5M2", 1, std::nullopt},
};

const DTypeRow* find_dtype(std::string_view name) {
  for (const DTypeRow& r : kDTypes) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

// nlohmann's parser recurses per nesting level; a real header nests three levels deep.
bool nesting_too_deep(std::string_view text, int limit) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > limit) return true;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return false;
}

}  // namespace

File::File(const std::filesystem::path& path) : File(MappedFile::open(path)) {}

File::File(std::shared_ptr<const MappedFile> file) : file_(std::move(file)) {
  parse();
}

void File::parse() {
  formats::ByteCursor c(file_->bytes(), path().string());
  const uint64_t header_size = c.read<uint64_t>("header size");
  if (header_size > c.remaining()) {
    c.fail("header size " + std::to_string(header_size) + " exceeds the file (" +
           std::to_string(c.remaining()) + " bytes after it)");
  }
  const std::string_view text = c.take_chars(header_size, "header");
  const auto data = file_->bytes().subspan(c.pos());
  if (nesting_too_deep(text, 32)) c.fail("header JSON nests too deeply");
  Json header;
  try {
    header = Json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    c.fail(std::string("header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) c.fail("header is not a JSON object");

  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const Json& v = it.value();
    if (name == "__metadata__") {
      if (!v.is_object()) c.fail("__metadata__ is not an object");
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string())
          c.fail("__metadata__ value of '" + m.key() + "' is not a string");
        metadata_.emplace_back(m.key(), m.value().get<std::string>());
      }
      continue;
    }
    const std::string what = "tensor '" + name + "'";
    if (!v.is_object()) c.fail(what + " is not a JSON object");
    const auto dtype = v.find("dtype");
    const auto shape = v.find("shape");
    const auto offsets = v.find("data_offsets");
    if (dtype == v.end() || !dtype->is_string()) c.fail(what + " has no string 'dtype'");
    if (shape == v.end() || !shape->is_array()) c.fail(what + " has no 'shape' array");
    if (offsets == v.end() || !offsets->is_array() || offsets->size() != 2 ||
        !(*offsets)[0].is_number_unsigned() || !(*offsets)[1].is_number_unsigned()) {
      c.fail(what + " has no 'data_offsets' pair of unsigned integers");
    }
    formats::TensorEntry e;
    e.name = name;
    const std::string dtype_str = dtype->get<std::string>();
    uint64_t numel = 1;
    for (const Json& d : *shape) {
      if (!d.is_number_unsigned())
        c.fail(what + " has a shape entry that is not an unsigned integer");
      const uint64_t dim = d.get<uint64_t>();
      if (dim > static_cast<uint64_t>(INT64_MAX) || formats::mul_overflows(numel, dim, &numel)) {
        c.fail(what + " has a shape whose element count overflows");
      }
      e.shape.push_back(static_cast<int64_t>(dim));
    }
    const uint64_t begin = (*offsets)[0].get<uint64_t>();
    const uint64_t end = (*offsets)[1].get<uint64_t>();
    if (begin > end || end > data.size()) {
      c.fail(what + " data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
             "] are outside the " + std::to_string(data.size()) + " bytes of tensor data");
    }
    e.nbytes = end - begin;
    const DTypeRow* row = find_dtype(dtype_str);
    if (row) {
      uint64_t expected;
      if (formats::mul_overflows(numel, row->elem_bytes, &expected) || expected != e.nbytes) {
        c.fail(what + " has " + std::to_string(e.nbytes) +
               " bytes of data but its shape and dtype " + dtype_str + " need " +
               std::to_string(numel) + " x " + std::to_string(row->elem_bytes));
      }
    }
    e.dtype_name = ascii_lower(dtype_str);
    if (row && row->dtype) {
      e.dtype = row->dtype;
      e.data = data.subspan(begin, e.nbytes);
    } else {
      e.problem = "dtype " + dtype_str + " is not supported";
    }
    if (!index_.emplace(name, tensors_.size()).second) c.fail("duplicate " + what);
    tensors_.push_back(std::move(e));
  }
}

const formats::TensorEntry* File::find_tensor(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

TensorView File::tensor(std::string_view name) const {
  const formats::TensorEntry* e = find_tensor(name);
  if (!e) throw Error(path().string(), "tensor '" + std::string(name) + "' not found");
  return e->view(path().string());
}

std::string_view dtype_name(kernels::DType dtype) {
  for (const DTypeRow& r : kDTypes) {
    if (r.dtype == dtype) return r.name;
  }
  throw Error("safetensors writer", "dtype " + std::string(formats::ggml_type_info(dtype).name) +
                                        " has no safetensors spelling");
}

Writer& Writer::add_tensor(std::string name, kernels::DType dtype, std::vector<int64_t> shape,
                           std::vector<std::byte> data) {
  return add_raw_tensor(std::move(name), std::string(dtype_name(dtype)), std::move(shape),
                        std::move(data));
}

Writer& Writer::add_raw_tensor(std::string name, std::string dtype, std::vector<int64_t> shape,
                               std::vector<std::byte> data) {
  for (const PendingTensor& t : tensors_) {
    if (t.name == name) throw Error("safetensors writer", "duplicate tensor '" + name + "'");
  }
  tensors_.push_back({std::move(name), std::move(dtype), std::move(shape), std::move(data)});
  return *this;
}

Writer& Writer::set_metadata(std::string key, std::string value) {
  metadata_.emplace_back(std::move(key), std::move(value));
  return *this;
}

std::vector<std::byte> Writer::to_bytes() const {
  Json header = Json::object();
  if (!metadata_.empty()) {
    Json meta = Json::object();
    for (const auto& [k, v] : metadata_) meta[k] = v;
    header["__metadata__"] = meta;
  }
  uint64_t offset = 0;
  for (const PendingTensor& t : tensors_) {
    header[t.name] = {
        {"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.data.size()}}};
    offset += t.data.size();
  }
  std::string text = header.dump();
  text.resize((text.size() + 7) / 8 * 8, ' ');  // keeps the data 8-byte aligned
  std::vector<std::byte> out(8 + text.size());
  const uint64_t n = text.size();
  std::memcpy(out.data(), &n, 8);
  std::memcpy(out.data() + 8, text.data(), text.size());
  for (const PendingTensor& t : tensors_) out.insert(out.end(), t.data.begin(), t.data.end());
  return out;
}

void Writer::write(const std::filesystem::path& path) const {
  write_file(path, to_bytes());
}

}  // namespace oxi::safetensors
