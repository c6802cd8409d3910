// open_model_file(): format detection and conversion of each reader's view into ModelFile.
#include "lib/formats/model_file.h"

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "lib/core/error.h"
#include "lib/formats/ggml_types.h"
#include "lib/formats/gguf.h"
#include "lib/formats/hf_dir.h"
#include "lib/formats/safetensors.h"
#include "lib/formats/torch_zip.h"

namespace oxi::formats {

namespace fs = std::filesystem;

namespace {

using Json = nlohmann::ordered_json;

// f32 values as their shortest decimal form (1e-05, not 9.999999747378752e-06).
double shortest(float f) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, f);
  return std::strtod(std::string(buf, r.ptr).c_str(), nullptr);
}

Json gguf_json(const gguf::Value& v) {
  if (v.type == gguf::ValueType::FLOAT32)
    return shortest(static_cast<float>(std::get<double>(v.data)));
  if (v.type == gguf::ValueType::ARRAY && v.array_type == gguf::ValueType::FLOAT32) {
    Json out = Json::array();
    for (float f : std::get<std::vector<float>>(std::get<gguf::Value::Array>(v.data))) {
      out.push_back(shortest(f));
    }
    return out;
  }
  return std::visit(
      [](const auto& x) -> Json {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, gguf::Value::Array>) {
          return std::visit([](const auto& vec) { return Json(vec); }, x);
        } else {
          return Json(x);
        }
      },
      v.data);
}

void add_gguf(const fs::path& path, ModelFile& m) {
  auto r = std::make_shared<const gguf::Reader>(path);
  m.format = "gguf";
  m.version = std::to_string(r->version());
  for (const auto& [key, value] : r->metadata()) {
    std::string type(gguf::value_type_name(value.type));
    if (value.type == gguf::ValueType::ARRAY) {
      type = "array[" + std::string(gguf::value_type_name(value.array_type)) + "]";
    }
    Json j = gguf_json(value);
    // Bool arrays are stored as bytes; show them as booleans.
    if (value.type == gguf::ValueType::ARRAY && value.array_type == gguf::ValueType::BOOL) {
      for (auto& e : j) e = e.get<int>() != 0;
    }
    m.metadata.push_back({key, type, std::move(j)});
  }
  for (const TensorView& t : r->tensors()) {
    TensorEntry e;
    e.name = t.name;
    e.dtype = t.dtype;
    e.dtype_name = std::string(ggml_type_info(t.dtype).name);
    e.shape = t.shape;
    e.nbytes = t.data.size();
    e.data = t.data;
    m.tensors.push_back(std::move(e));
  }
  m.owners.push_back(r);
}

// Scalars and scalar lists of a torch checkpoint's tree (e.g. Whisper's dims) as metadata.
void torch_metadata(const pickle::Object& o, const std::string& prefix, int depth, ModelFile& m) {
  using K = pickle::Object::Kind;
  if (o.kind != K::Dict || depth > 8) return;
  for (const auto& [key, v] : o.entries) {
    if (key->kind != K::String) continue;
    const std::string name = prefix.empty() ? key->text : prefix + "." + key->text;
    switch (v->kind) {
      case K::Int:
        m.metadata.push_back({name, "int", v->integer});
        break;
      case K::Float:
        m.metadata.push_back({name, "float", v->real});
        break;
      case K::Bool:
        m.metadata.push_back({name, "bool", v->boolean});
        break;
      case K::String:
        m.metadata.push_back({name, "str", v->text});
        break;
      case K::None:
        m.metadata.push_back({name, "None", nullptr});
        break;
      case K::Dict:
        torch_metadata(*v, name, depth + 1, m);
        break;
      case K::List:
      case K::Tuple: {
        Json arr = Json::array();
        for (const pickle::Object* x : v->items) {
          if (x->kind == K::Int)
            arr.push_back(x->integer);
          else if (x->kind == K::Float)
            arr.push_back(x->real);
          else if (x->kind == K::String)
            arr.push_back(x->text);
          else
            arr.push_back(std::string(x->kind_name()));
        }
        m.metadata.push_back({name, std::string(v->kind_name()), std::move(arr)});
        break;
      }
      default:
        break;
    }
  }
}

void json_file_metadata(const std::string& prefix, const nlohmann::json& j, ModelFile& m) {
  if (!j.is_object()) return;
  for (auto it = j.begin(); it != j.end(); ++it) {
    m.metadata.push_back({prefix + it.key(), "json", Json::parse(it.value().dump())});
  }
}

void add_directory_like(hf::Directory d, ModelFile& m) {
  const std::pair<const char*, const std::optional<fs::path>*> files[] = {
      {"config.json", &d.config_json},
      {"generation_config.json", &d.generation_config_json},
      {"tokenizer.json", &d.tokenizer_json},
      {"tokenizer_config.json", &d.tokenizer_config_json},
      {"vocab.json", &d.vocab_json},
      {"merges.txt", &d.merges_txt},
      {"special_tokens_map.json", &d.special_tokens_map_json},
      {"added_tokens.json", &d.added_tokens_json},
      {"preprocessor_config.json", &d.preprocessor_config_json},
  };
  Json present = Json::array();
  for (const auto& [name, p] : files) {
    if (*p) present.push_back(name);
  }
  m.metadata.push_back({"files", "list", std::move(present)});
  m.metadata.push_back({"weights.format", "str", d.weights_format});
  Json weight_files = Json::array();
  for (const fs::path& f : d.weight_files) weight_files.push_back(f.filename().string());
  m.metadata.push_back({"weights.files", "list", std::move(weight_files)});
  json_file_metadata("config.", d.config, m);
  m.tensors = std::move(d.tensors);
  m.owners = std::move(d.owners);
}

std::string read_head(const fs::path& path, size_t n) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string(), "cannot open");
  std::string head(n, '\0');
  in.read(head.data(), static_cast<std::streamsize>(n));
  head.resize(static_cast<size_t>(in.gcount()));
  return head;
}

}  // namespace

std::string detect_format(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return "hf-directory";
  const std::string name = path.filename().string();
  if (name.ends_with(".index.json")) return "sharded";
  const std::string head = read_head(path, 16);
  if (head.starts_with("GGUF")) return "gguf";
  if (head.starts_with("PK\x03\x04")) return "torch";
  if (path.extension() == ".safetensors") return "safetensors";
  if (head.size() >= 9 && head[8] == '{') return "safetensors";
  if (head.starts_with("\x80\x02\x8a\x0a")) return "torch-legacy";
  return "";
}

ModelFile open_model_file(const fs::path& path) {
  ModelFile m;
  m.path = path;
  const std::string format = detect_format(path);
  if (format == "gguf") {
    add_gguf(path, m);
  } else if (format == "safetensors") {
    auto f = std::make_shared<const safetensors::File>(path);
    m.format = "safetensors";
    for (const auto& [k, v] : f->metadata()) m.metadata.push_back({k, "str", v});
    m.tensors = f->tensors();
    m.owners.push_back(f);
  } else if (format == "torch") {
    auto a = std::make_shared<const torch::Archive>(path);
    m.format = "torch";
    torch_metadata(a->root(), "", 0, m);
    m.tensors = a->tensors();
    m.owners.push_back(a);
  } else if (format == "hf-directory") {
    m.format = "hf-directory";
    add_directory_like(hf::open_directory(path), m);
  } else if (format == "sharded") {
    hf::Directory d;
    d.dir = path.parent_path();
    hf::load_sharded_weights(path, d);
    m.format = d.weights_format + "-sharded";
    add_directory_like(std::move(d), m);
  } else if (format == "torch-legacy") {
    throw Error(path.string(),
                "legacy (pre-1.6, non-zip) torch files are not supported; "
                "re-save with torch.save in a current PyTorch");
  } else {
    throw Error(path.string(),
                "unrecognized model file format (not GGUF, safetensors, a torch "
                "zip checkpoint or a directory)");
  }
  return m;
}

const TensorEntry* ModelFile::find_tensor(std::string_view name) const {
  for (const TensorEntry& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

uint64_t ModelFile::total_bytes() const {
  uint64_t n = 0;
  for (const TensorEntry& t : tensors) n += t.nbytes;
  return n;
}

}  // namespace oxi::formats
