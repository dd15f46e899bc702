#include "tools/loom/bench_io.h"

#include <fstream>
#include <sstream>

namespace loom::cli {

namespace {

namespace fs = std::filesystem;

std::string shapeText(const std::vector<int64_t>& s) {
  return s.empty() ? "-" : fmt::format("{}", fmt::join(s, ","));
}

// One line of a raw-tensor manifest: `name dtype d0,d1,... file` (files are logical row-major,
// little-endian; `-` is the shape of a scalar).
struct ManifestLine {
  std::string dtype, shape, file;
};

std::map<std::string, ManifestLine> readManifest(const fs::path& p) {
  std::ifstream in(p);
  LOOM_USER_CHECK(in.good(), "--inputs: cannot read the manifest `{}` (lines `name dtype "
                  "d0,d1,... file`, as bench/peer.py writes)", p.string());
  std::map<std::string, ManifestLine> m;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string name;
    ManifestLine l;
    LOOM_USER_CHECK(static_cast<bool>(ls >> name >> l.dtype >> l.shape >> l.file),
                    "{}:{}: expected `name dtype d0,d1,... file`, got `{}`", p.string(), n, line);
    m[name] = l;
  }
  return m;
}

}  // namespace

std::vector<HostTensor> loadInputs(const fs::path& dir, const ir::Fusion& f, const Bindings& sizes,
                                   const std::map<std::string, std::vector<int>>& layouts) {
  auto manifest = readManifest(dir / "inputs.txt");
  std::vector<HostTensor> out;
  for (const ir::Value* v : f.inputs()) {
    auto shape = evalShape(v, sizes);
    auto it = manifest.find(v->name());
    LOOM_USER_CHECK(it != manifest.end(), "--inputs {}: inputs.txt has no line for input `{}`",
                    dir.string(), v->name());
    const ManifestLine& l = it->second;
    LOOM_USER_CHECK(l.dtype == dtypeName(v->dtype()) && l.shape == shapeText(shape),
                    "--inputs {}: input `{}` is {} [{}] in inputs.txt but the fusion needs {} [{}] "
                    "(check --dim and --dtype)", dir.string(), v->name(), l.dtype, l.shape,
                    dtypeName(v->dtype()), shapeText(shape));
    HostTensor h = HostTensor::empty(v->dtype(), shape);
    fs::path file = dir / l.file;
    std::error_code ec;
    auto fsize = fs::file_size(file, ec);
    LOOM_USER_CHECK(!ec && fsize == h.nbytes(), "--inputs: `{}` should hold {} bytes ({} [{}]), {}",
                    file.string(), h.nbytes(), l.dtype, l.shape,
                    ec ? "but cannot be read" : fmt::format("but holds {}", fsize));
    std::ifstream in(file, std::ios::binary);
    in.read(static_cast<char*>(h.storageData()), static_cast<std::streamsize>(h.nbytes()));
    LOOM_USER_CHECK(in.good(), "--inputs: reading `{}` failed", file.string());
    auto lay = layouts.find(v->name());
    out.push_back(lay == layouts.end() ? h : h.withOrder(lay->second));
  }
  return out;
}

void saveOutputs(const fs::path& dir, const ir::Fusion& f, const std::vector<HostTensor>& outs) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  std::ofstream manifest(dir / "outputs.txt");
  LOOM_USER_CHECK(manifest.good(), "--save-outputs: cannot write `{}`", (dir / "outputs.txt").string());
  for (size_t i = 0; i < outs.size(); ++i) {
    const std::string& name = f.outputs()[i].name;
    HostTensor c = outs[i].contiguous();
    std::string file = "output." + name + ".bin";
    std::ofstream o(dir / file, std::ios::binary);
    size_t bytes = static_cast<size_t>(c.numel()) * static_cast<size_t>(dtypeBytes(c.dtype()));
    o.write(static_cast<const char*>(c.data()), static_cast<std::streamsize>(bytes));
    LOOM_USER_CHECK(o.good(), "--save-outputs: writing `{}` failed", (dir / file).string());
    manifest << name << ' ' << dtypeName(c.dtype()) << ' ' << shapeText(c.shape()) << ' ' << file << '\n';
  }
}

}  // namespace loom::cli
