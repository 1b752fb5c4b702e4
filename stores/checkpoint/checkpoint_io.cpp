#include "stores/checkpoint/checkpoint_io.hpp"

#include <cstring>
#include <filesystem>

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/exception.h>

#include "base/atomic_file.hpp"
#include "compute/hash.hpp"
#include "messages/checkpoint.capnp.h"
#include "messages/error.hpp"
#include "stores/checkpoint/capnp_bytes.hpp"
#include "stores/checkpoint/checkpoint_dir.hpp"

namespace darcy::stores {

namespace {

// Format 2 adds the service, the checkpoint directory, plain parts and the WALS section; a
// format-1 manifest (embedding only) still reads.
// Format 3 ends the manifest with a checksum trailer: the magic, then the hash of every byte
// before it. Formats 1 and 2 have none and still read; a manifest of format 3 or later without
// a valid trailer is refused, so that no single flipped bit is ever accepted.
constexpr uint32_t format_version = 3;
/// Incremental checkpoints: a base to apply on. Readers before it would take the delta alone
/// for the whole checkpoint, so a full checkpoint keeps writing format_version.
constexpr uint32_t delta_format_version = 4;
constexpr uint32_t oldest_format_version = 1;
constexpr uint32_t first_checksummed_version = 3;
constexpr std::string_view trailer_magic = "DRCYMSUM";
constexpr size_t trailer_size = trailer_magic.size() + sizeof(uint64_t);

std::string with_trailer(std::string bytes) {
  uint64_t sum = compute::hash_key(bytes);
  bytes.append(trailer_magic);
  bytes.append(reinterpret_cast<const char*>(&sum), sizeof(sum));
  return bytes;
}

// Strips and checks the trailer. Sets `checked` when the manifest had one.
caf::error check_trailer(std::string& bytes, const std::string& path, bool& checked) {
  checked = bytes.size() >= trailer_size &&
            std::string_view{bytes}.substr(bytes.size() - trailer_size, trailer_magic.size()) ==
              trailer_magic;
  if (!checked)
    return {};
  uint64_t sum = 0;
  std::memcpy(&sum, bytes.data() + bytes.size() - sizeof(sum), sizeof(sum));
  bytes.resize(bytes.size() - trailer_size);
  if (compute::hash_key(bytes) != sum)
    return make_error(errc::corrupt_file, path + ": checksum mismatch");
  return {};
}

std::string join(const std::string& dir, const std::string& name) {
  return (std::filesystem::path{dir} / name).string();
}

void to_capnp(EmbeddingConfig::Builder out, const de_config& cfg) {
  out.setName(cfg.name);
  out.setDim(cfg.dim);
  auto init = out.initInit();
  init.setKind(static_cast<uint8_t>(cfg.init.kind));
  init.setLow(cfg.init.low);
  init.setHigh(cfg.init.high);
  init.setMean(cfg.init.mean);
  init.setStddev(cfg.init.stddev);
  init.setSeed(cfg.init.seed);
  auto opt = out.initOptimizer();
  auto& o = cfg.optimizer;
  opt.setKind(static_cast<uint8_t>(o.kind));
  opt.setLearningRate(o.learning_rate);
  opt.setInitialAccumulator(o.initial_accumulator);
  opt.setMomentum(o.momentum);
  opt.setNesterov(o.nesterov);
  opt.setBeta1(o.beta1);
  opt.setBeta2(o.beta2);
  opt.setEpsilon(o.epsilon);
  opt.setL1(o.l1);
  opt.setL2(o.l2);
  opt.setRule(o.rule);
  auto params = opt.initParams(static_cast<unsigned>(o.params.size()));
  for (unsigned i = 0; i < o.params.size(); ++i) {
    params[i].setName(o.params[i].name);
    params[i].setValue(o.params[i].value);
  }
  out.setAdmissionKind(static_cast<uint8_t>(cfg.admission.kind));
  out.setAdmissionMinCount(cfg.admission.min_count);
  out.setAdmissionCapacity(cfg.admission.capacity);
  out.setAdmissionFpRate(cfg.admission.fp_rate);
  out.setEvictionKind(static_cast<uint8_t>(cfg.eviction.kind));
  out.setEvictionTtlSteps(cfg.eviction.ttl_steps);
  out.setEvictionMaxRows(cfg.eviction.max_rows);
  out.setBackend(static_cast<uint8_t>(cfg.backend));
  out.setReadOnly(cfg.read_only);
  write_floats(out.initDefaultValue(static_cast<unsigned>(cfg.default_value.size())),
               cfg.default_value);
  out.setMaxBatch(cfg.max_batch);
  out.setBackendPath(cfg.path);
  out.setCacheBytes(cfg.cache_bytes);
  out.setStalenessMs(cfg.staleness_ms);
  out.setSamplerKind(static_cast<uint8_t>(cfg.sampler.kind));
  out.setSamplerPower(cfg.sampler.power);
  out.setAnnEnabled(cfg.ann.enabled);
  out.setAnnLists(cfg.ann.lists);
  out.setAnnProbes(cfg.ann.probes);
  out.setAnnRerank(cfg.ann.rerank);
  out.setAnnRefreshMs(cfg.ann.refresh_ms);
}

de_config from_capnp(EmbeddingConfig::Reader in) {
  de_config cfg;
  cfg.name = in.getName();
  cfg.dim = in.getDim();
  auto init = in.getInit();
  cfg.init = {static_cast<init_kind>(init.getKind()),
              init.getLow(),
              init.getHigh(),
              init.getMean(),
              init.getStddev(),
              init.getSeed()};
  auto o = in.getOptimizer();
  cfg.optimizer = {static_cast<optimizer_kind>(o.getKind()),
                   o.getLearningRate(),
                   o.getInitialAccumulator(),
                   o.getMomentum(),
                   o.getNesterov(),
                   o.getBeta1(),
                   o.getBeta2(),
                   o.getEpsilon(),
                   o.getL1(),
                   o.getL2(),
                   o.getRule(),
                   {}};
  for (auto p : o.getParams())
    cfg.optimizer.params.push_back({p.getName(), p.getValue()});
  cfg.admission = {static_cast<admission_kind>(in.getAdmissionKind()), in.getAdmissionMinCount(),
                   in.getAdmissionCapacity(), in.getAdmissionFpRate()};
  cfg.eviction = {static_cast<eviction_kind>(in.getEvictionKind()), in.getEvictionTtlSteps(),
                  in.getEvictionMaxRows()};
  cfg.backend = static_cast<backend_kind>(in.getBackend());
  cfg.read_only = in.getReadOnly();
  read_floats(in.getDefaultValue(), cfg.default_value);
  cfg.max_batch = in.getMaxBatch();
  cfg.path = in.getBackendPath();
  cfg.cache_bytes = in.getCacheBytes();
  cfg.staleness_ms = in.getStalenessMs();
  cfg.sampler = {static_cast<sampler_kind>(in.getSamplerKind()), in.getSamplerPower()};
  cfg.ann = {in.getAnnEnabled(), in.getAnnLists(), in.getAnnProbes(), in.getAnnRerank(),
             in.getAnnRefreshMs()};
  return cfg;
}

} // namespace

std::string encode_config(const de_config& cfg) {
  capnp::MallocMessageBuilder message;
  to_capnp(message.initRoot<EmbeddingConfig>(), cfg);
  return flat_bytes(message);
}

caf::expected<de_config> decode_config(const std::string& bytes, const std::string& what) {
  auto words = to_words(bytes, what);
  if (!words)
    return std::move(words.error());
  try {
    capnp::FlatArrayMessageReader reader{*words, reader_options(words->size())};
    return from_capnp(reader.getRoot<EmbeddingConfig>());
  } catch (const kj::Exception& e) {
    return make_error(errc::corrupt_file, what + ": " + e.getDescription().cStr());
  }
}

namespace {

void to_capnp(capnp::List<FileEntry>::Builder out, const std::vector<file_info>& files) {
  for (unsigned f = 0; f < files.size(); ++f) {
    out[f].setPath(files[f].path);
    out[f].setChecksum(files[f].checksum);
    out[f].setRows(files[f].rows);
    out[f].setBytes(files[f].bytes);
  }
}

std::vector<file_info> from_capnp(capnp::List<FileEntry>::Reader in) {
  std::vector<file_info> files;
  for (auto f : in)
    files.push_back({f.getPath(), f.getChecksum(), f.getRows(), f.getBytes()});
  return files;
}

} // namespace

caf::error write_manifest(const std::string& dir, const checkpoint_manifest& manifest,
                          bool durable) {
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<Manifest>();
  root.setFormatVersion(manifest.base.empty() ? format_version : delta_format_version);
  root.setBase(manifest.base);
  root.setSameAs(manifest.same_as);
  root.setService(manifest.service);
  root.setCheckpoint(manifest.checkpoint);
  root.setStep(manifest.step);
  root.setShardCount(manifest.shard_count);
  auto embeddings = root.initEmbeddings(static_cast<unsigned>(manifest.embeddings.size()));
  for (unsigned e = 0; e < manifest.embeddings.size(); ++e) {
    auto& src = manifest.embeddings[e];
    to_capnp(embeddings[e].initConfig(), src.config);
    to_capnp(embeddings[e].initFiles(static_cast<unsigned>(src.files.size())), src.files);
  }
  to_capnp(root.initParts(static_cast<unsigned>(manifest.parts.size())), manifest.parts);
  auto wals = root.initWals();
  wals.setRunId(manifest.wals.run_id);
  auto losses = wals.initLosses(static_cast<unsigned>(manifest.wals.losses.size()));
  for (unsigned i = 0; i < manifest.wals.losses.size(); ++i)
    losses.set(i, manifest.wals.losses[i]);
  root.setExtra(capnp::Data::Reader{reinterpret_cast<const kj::byte*>(manifest.extra.data()),
                                    manifest.extra.size()});
  return base::write_file_atomically(join(dir, manifest_name), with_trailer(flat_bytes(message)),
                                     durable);
}

caf::expected<checkpoint_manifest> read_manifest(const std::string& dir) {
  auto path = join(dir, manifest_name);
  auto bytes = base::read_file(path);
  if (!bytes)
    return std::move(bytes.error());
  bool checked = false;
  if (auto err = check_trailer(*bytes, path, checked))
    return err;
  auto words = to_words(*bytes, path);
  if (!words)
    return std::move(words.error());
  try {
    capnp::FlatArrayMessageReader reader{*words, reader_options(words->size())};
    auto root = reader.getRoot<Manifest>();
    auto version = root.getFormatVersion();
    if (version < oldest_format_version || version > delta_format_version)
      return make_error(errc::corrupt_file,
                        path + ": unknown format version " + std::to_string(version));
    if (version >= first_checksummed_version && !checked)
      return make_error(errc::corrupt_file, path + ": the manifest's checksum is missing");
    checkpoint_manifest result;
    result.service = version == 1 ? embedding_service_name : std::string{root.getService()};
    result.checkpoint = root.getCheckpoint();
    result.step = root.getStep();
    result.shard_count = root.getShardCount();
    for (auto e : root.getEmbeddings())
      result.embeddings.push_back({from_capnp(e.getConfig()), from_capnp(e.getFiles())});
    result.parts = from_capnp(root.getParts());
    result.wals.run_id = root.getWals().getRunId();
    for (auto l : root.getWals().getLosses())
      result.wals.losses.push_back(l);
    auto extra = root.getExtra();
    result.extra.assign(reinterpret_cast<const char*>(extra.begin()), extra.size());
    result.base = root.getBase();
    result.same_as = root.getSameAs();
    return result;
  } catch (const kj::Exception& e) {
    return make_error(errc::corrupt_file, path + ": " + e.getDescription().cStr());
  }
}

} // namespace darcy::stores
