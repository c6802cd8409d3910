#include "elements/model_loading.h"

#include "lib/core/model_cache.h"
#include "lib/hub/hub_options.h"

std::shared_ptr<const oxi::vad::SileroVadModel> oxi_shared_vad_model(const std::string& spec) {
  return oxi::ModelCache<oxi::vad::SileroVadModel>::instance().get("silero-vad:" + spec, [&] {
    return oxi::vad::SileroVadModel::load_spec(spec, oxi::hub::HubOptions::from_environment());
  });
}
