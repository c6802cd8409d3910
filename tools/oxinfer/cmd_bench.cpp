#include "lib/core/error.h"
#include "tools/oxinfer/commands.h"

namespace oxi::cli {

int run_bench(const Argv&) { throw oxi::Error("oxinfer bench", "not implemented yet"); }

}  // namespace oxi::cli
