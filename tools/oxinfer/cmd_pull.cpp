// oxinfer pull REPO[:QUANT][@REV]: downloads a Hugging Face repo (what a model needs, one GGUF
// quant, or the files --include names) into the cache and prints the local path to use.
#include <cstdio>
#include <string>
#include <vector>

#include "lib/hub/hub.h"
#include "tools/oxinfer/args.h"
#include "tools/oxinfer/commands.h"

namespace oxi::cli {

int run_pull(const Argv& argv) {
  ArgParser parser("pull", "oxinfer pull REPO[:QUANT][@REVISION] [options]",
                   "Download a Hugging Face repo into the cache and print its local path:\n"
                   "the GGUF file for REPO:QUANT (e.g. org/name-GGUF:Q4_K_M), else the snapshot\n"
                   "directory with the config, tokenizer and weight files a model needs.\n"
                   "Environment: HF_ENDPOINT, HF_TOKEN, OXINFER_CACHE, OXINFER_OFFLINE.");
  parser.option("cache-dir", "DIR",
                "cache directory (default $OXINFER_CACHE or ~/.cache/oxinfer/hub)");
  parser.flag("offline", "use only the cache, never the network");
  parser.option("include", "PATTERN",
                "download only files matching this name or glob (repeatable; prints the "
                "snapshot directory)");
  parser.flag("no-progress", "no progress bar");
  const ParsedArgs args = parser.parse(argv);
  if (args.positional().size() != 1) {
    throw UsageError("expected one repo id (org/name[:QUANT][@REVISION]); see --help");
  }

  hub::HubOptions options = hub::HubOptions::from_environment();
  if (auto dir = args.get("cache-dir")) options.cache_dir = *dir;
  if (args.flag("offline")) options.offline = true;
  if (args.flag("no-progress")) options.progress = false;

  const hub::RepoSpec spec = hub::parse_repo_spec(args.positional().front());
  const std::vector<std::string> patterns = args.get_all("include");
  const std::filesystem::path path =
      patterns.empty() ? hub::resolve_model(spec, options) : hub::download(spec, patterns, options);
  std::printf("%s\n", path.c_str());
  return 0;
}

}  // namespace oxi::cli
