#pragma once
// `loom bench --inputs DIR --save-outputs DIR`: raw tensors in files, as bench/peer.py writes
// and reads them (logical row-major, little-endian; manifests of `name dtype d0,d1,... file`).
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "frontend/internal_api.h"

namespace loom::cli {

// The fusion's inputs from DIR/inputs.txt, checked against what the fusion expects (dtype and
// shape), in the given layouts.
std::vector<HostTensor> loadInputs(const std::filesystem::path& dir, const ir::Fusion& f, const Bindings& sizes,
                                   const std::map<std::string, std::vector<int>>& layouts);

// Each output as DIR/output.NAME.bin (logical row-major) and a line of DIR/outputs.txt.
void saveOutputs(const std::filesystem::path& dir, const ir::Fusion& f, const std::vector<HostTensor>& outs);

}  // namespace loom::cli
