/* Models the elements share through oxi::ModelCache, under keys that every element loading the
 * same model uses: oxivad and oxiwhisper's vad-model hold one copy of a Silero VAD model. */
#pragma once

#include <gst/gst.h>

#include <memory>
#include <string>

#include "lib/vad/silero_vad_model.h"

/* The Silero VAD v5 model of `spec` (a .safetensors file, a directory holding it, or a Hub repo
 * id), loaded or shared; throws on failure. Call it off the streaming thread (READY->PAUSED):
 * it may read or download. */
G_GNUC_INTERNAL std::shared_ptr<const oxi::vad::SileroVadModel> oxi_shared_vad_model(
    const std::string& spec);
