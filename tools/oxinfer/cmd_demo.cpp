#include "lib/core/error.h"
#include "tools/oxinfer/commands.h"

namespace oxi::cli {

int run_demo(const Argv&) { throw oxi::Error("oxinfer demo", "not implemented yet"); }

}  // namespace oxi::cli
