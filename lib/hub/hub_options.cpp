#include "lib/hub/hub_options.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <optional>

#include "lib/core/ascii.h"

namespace oxi::hub {

namespace {

std::optional<std::string> env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

bool env_truthy(const char* name) {
  std::optional<std::string> value = env(name);
  if (!value) return false;
  const std::string lower = ascii_lower(*value);
  return lower == "1" || lower == "true" || lower == "yes" || lower == "on";
}

std::filesystem::path home_dir() {
  if (auto home = env("HOME")) return *home;
  return std::filesystem::temp_directory_path();
}

std::filesystem::path xdg_cache_home() {
  if (auto xdg = env("XDG_CACHE_HOME")) return *xdg;
  return home_dir() / ".cache";
}

// The first line of a token file, trimmed; empty when the file is missing.
std::string read_token_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return "";
  const auto is_space = [](unsigned char c) { return std::isspace(c) != 0; };
  line.erase(line.begin(), std::find_if_not(line.begin(), line.end(), is_space));
  line.erase(std::find_if_not(line.rbegin(), line.rend(), is_space).base(), line.end());
  return line;
}

std::string default_token() {
  if (auto token = env("HF_TOKEN")) return *token;
  if (auto path = env("HF_TOKEN_PATH")) return read_token_file(*path);
  const std::filesystem::path hf_home =
      env("HF_HOME") ? std::filesystem::path(*env("HF_HOME")) : xdg_cache_home() / "huggingface";
  return read_token_file(hf_home / "token");
}

}  // namespace

std::filesystem::path default_cache_dir() {
  if (auto dir = env("OXINFER_CACHE")) return *dir;
  return xdg_cache_home() / "oxinfer" / "hub";
}

HubOptions HubOptions::from_environment() {
  HubOptions options;
  options.cache_dir = default_cache_dir();
  options.offline = env_truthy("OXINFER_OFFLINE") || env_truthy("HF_HUB_OFFLINE");
  if (auto endpoint = env("HF_ENDPOINT")) options.endpoint = *endpoint;
  while (options.endpoint.size() > 1 && options.endpoint.back() == '/') options.endpoint.pop_back();
  options.token = default_token();
  return options;
}

}  // namespace oxi::hub
