// Where and how the Hub client works: cache directory, offline mode, endpoint, token, progress.
#pragma once

#include <filesystem>
#include <string>

namespace oxi::hub {

inline constexpr const char* kDefaultEndpoint = "https://huggingface.co";

struct HubOptions {
  // Root of the download cache (see lib/hub/README.md for its layout).
  std::filesystem::path cache_dir;
  // Use only the cache: never touch the network.
  bool offline = false;
  // "https://huggingface.co" or a mirror; no trailing slash.
  std::string endpoint = kDefaultEndpoint;
  // Hugging Face access token, sent only to the endpoint's own host; empty for none.
  std::string token;
  // Draw a progress bar on stderr while downloading (only when stderr is a terminal).
  bool progress = true;

  // The defaults the environment asks for:
  //   cache_dir  $OXINFER_CACHE, else $XDG_CACHE_HOME/oxinfer/hub, else ~/.cache/oxinfer/hub
  //   offline    OXINFER_OFFLINE or HF_HUB_OFFLINE set to 1/true/yes/on
  //   endpoint   $HF_ENDPOINT, else https://huggingface.co
  //   token      $HF_TOKEN, else the file $HF_TOKEN_PATH, else $HF_HOME/token
  //              (HF_HOME defaults to ~/.cache/huggingface)
  static HubOptions from_environment();
};

// The default cache directory as described above.
std::filesystem::path default_cache_dir();

}  // namespace oxi::hub
