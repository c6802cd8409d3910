// oxinfer inspect FILE|DIR: format, metadata and tensor table of any model file oxinfer reads.
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "lib/core/error.h"
#include "lib/formats/model_file.h"
#include "tools/oxinfer/args.h"
#include "tools/oxinfer/commands.h"

namespace oxi::cli {

namespace {

using Json = nlohmann::ordered_json;

constexpr size_t kArrayHead = 8;  // array elements shown
constexpr size_t kMaxValueChars = 120;

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string human_bytes(uint64_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", v, units[u]);
  return buf;
}

// Long arrays become their first few elements; long strings are cut.
Json abbreviated(const Json& v, bool* truncated) {
  *truncated = false;
  if (v.is_array() && v.size() > kArrayHead) {
    *truncated = true;
    Json head = Json::array();
    for (size_t i = 0; i < kArrayHead; ++i) head.push_back(v[i]);
    return head;
  }
  return v;
}

std::string value_text(const formats::MetadataEntry& e) {
  bool truncated = false;
  const Json shown = abbreviated(e.value, &truncated);
  std::string s = shown.is_string() ? shown.get<std::string>() : shown.dump();
  if (truncated) s.insert(s.size() - 1, ", ...");
  if (s.size() > kMaxValueChars) s = s.substr(0, kMaxValueChars) + "...";
  for (char& c : s) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  return s;
}

uint64_t parameter_count(const formats::ModelFile& m) {
  uint64_t n = 0;
  for (const auto& t : m.tensors) {
    uint64_t k = 1;
    for (int64_t d : t.shape) k *= static_cast<uint64_t>(d);
    n += k;
  }
  return n;
}

void print_text(const formats::ModelFile& m, size_t max_tensors) {
  std::printf("file:     %s\n", m.path.string().c_str());
  std::printf("format:   %s%s\n", m.format.c_str(),
              m.version.empty() ? "" : (" v" + m.version).c_str());
  std::printf("metadata: %zu entries\n", m.metadata.size());
  size_t key_width = 0, type_width = 0;
  for (const auto& e : m.metadata) {
    key_width = std::max(key_width, e.key.size());
    type_width = std::max(type_width, e.type.size() + 8);
  }
  key_width = std::min<size_t>(key_width, 48);
  for (const auto& e : m.metadata) {
    std::string type = e.type;
    if (e.value.is_array()) type.append("[").append(std::to_string(e.value.size())).append("]");
    std::printf("  %-*s  %-*s  %s\n", static_cast<int>(key_width), e.key.c_str(),
                static_cast<int>(type_width), type.c_str(), value_text(e).c_str());
  }
  std::printf("tensors:  %zu\n", m.tensors.size());
  size_t name_width = 4;
  for (size_t i = 0; i < m.tensors.size() && i < max_tensors; ++i) {
    name_width = std::max(name_width, m.tensors[i].name.size());
  }
  name_width = std::min<size_t>(name_width, 60);
  if (!m.tensors.empty() && max_tensors > 0) {
    std::printf("  %-*s  %-6s  %-22s  %12s\n", static_cast<int>(name_width), "name", "dtype",
                "shape", "bytes");
  }
  for (size_t i = 0; i < m.tensors.size() && i < max_tensors; ++i) {
    const auto& t = m.tensors[i];
    std::printf("  %-*s  %-6s  %-22s  %12llu%s%s\n", static_cast<int>(name_width), t.name.c_str(),
                t.dtype_name.c_str(), shape_string(t.shape).c_str(),
                static_cast<unsigned long long>(t.nbytes),
                t.usable() ? "" : "  (unusable: ", t.usable() ? "" : (t.problem + ")").c_str());
  }
  if (m.tensors.size() > max_tensors) {
    std::printf("  ... %zu more (--tensors all lists every one)\n", m.tensors.size() - max_tensors);
  }
  std::printf("total:    %zu tensors, %llu parameters, %s\n", m.tensors.size(),
              static_cast<unsigned long long>(parameter_count(m)),
              human_bytes(m.total_bytes()).c_str());
}

void print_json(const formats::ModelFile& m, size_t max_tensors) {
  Json out;
  out["path"] = m.path.string();
  out["format"] = m.format;
  out["version"] = m.version;
  Json meta = Json::array();
  for (const auto& e : m.metadata) {
    bool truncated = false;
    Json item = {{"key", e.key}, {"type", e.type}};
    item["value"] = abbreviated(e.value, &truncated);
    if (e.value.is_array()) item["length"] = e.value.size();
    if (truncated) item["truncated"] = true;
    meta.push_back(std::move(item));
  }
  out["metadata"] = std::move(meta);
  Json tensors = Json::array();
  for (size_t i = 0; i < m.tensors.size() && i < max_tensors; ++i) {
    const auto& t = m.tensors[i];
    Json item = {
        {"name", t.name}, {"dtype", t.dtype_name}, {"shape", t.shape}, {"bytes", t.nbytes}};
    if (!t.usable()) item["problem"] = t.problem;
    tensors.push_back(std::move(item));
  }
  out["tensors"] = std::move(tensors);
  out["tensor_count"] = m.tensors.size();
  out["parameter_count"] = parameter_count(m);
  out["total_bytes"] = m.total_bytes();
  std::printf("%s\n", out.dump(2, ' ', false, Json::error_handler_t::replace).c_str());
}

}  // namespace

int run_inspect(const Argv& argv) {
  ArgParser p("inspect", "oxinfer inspect FILE|DIR [--json] [--tensors N|all]",
              "Print the format, metadata and tensor table of a GGUF, safetensors or torch file, a "
              "shard index, or a Hugging Face model directory.");
  p.flag("json", "print JSON instead of text");
  p.option("tensors", "N|all", "how many tensors to list (default 32)");
  const ParsedArgs args = p.parse(argv);
  if (args.positional().size() != 1) throw UsageError("expects one FILE or DIR (see --help)");
  size_t max_tensors = 32;
  if (auto t = args.get("tensors")) {
    if (*t == "all")
      max_tensors = SIZE_MAX;
    else
      max_tensors = static_cast<size_t>(std::max(0LL, args.get_int("tensors", 32)));
  }
  const formats::ModelFile m = formats::open_model_file(args.positional()[0]);
  if (args.flag("json"))
    print_json(m, max_tensors);
  else
    print_text(m, max_tensors);
  return 0;
}

}  // namespace oxi::cli
