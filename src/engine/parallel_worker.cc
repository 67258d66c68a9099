// The worker ranks' side of a parallel run (model_executor.h): wait for rank
// 0's session, load and shard the model, then run every step rank 0 sends.
#include <map>
#include <sstream>

#include "dist/mpi_runtime.h"
#include "engine/model_executor.h"
#include "engine/step_message.h"

namespace tessera {

namespace {

Result<ExecutorConfig> parse_session(const std::string& text, std::string& path, std::string& shape) {
  std::map<std::string, std::string> kv;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const size_t eq = line.find('=');
    if (eq != std::string::npos) kv[line.substr(0, eq)] = line.substr(eq + 1);
  }
  try {
    ExecutorConfig c;
    path = kv.at("path");
    shape = kv.at("shape");
    c.quantize = kv.at("quantize");
    c.check_tensors = kv.at("check_tensors") == "1";
    c.backend.threads = std::stoi(kv.at("threads"));
    c.backend.device = kv.at("device");
    const int isa = std::stoi(kv.at("isa"));
    if (isa >= 0) c.backend.isa = static_cast<Isa>(isa);
    c.backend.tile_kernels = kv.at("tile_kernels") == "1";
    c.backend.decode_streams = std::stoi(kv.at("decode_streams"));
    c.backend.f16_matmul = kv.at("f16_matmul") == "1" ? F16Matmul::kF16 : F16Matmul::kAuto;
    c.kv_dtype = static_cast<KvDtype>(std::stoi(kv.at("kv_dtype")));
    c.kv_cache_memory = std::stoull(kv.at("kv_cache_memory"));
    c.ctx_size = std::stoll(kv.at("ctx_size"));
    c.parallel.tp_size = std::stoi(kv.at("tp"));
    c.parallel.pp_size = std::stoi(kv.at("pp"));
    std::istringstream split(kv.at("split"));
    for (std::string n; std::getline(split, n, ',');) c.parallel.layer_split.push_back(std::stoi(n));
    return c;
  } catch (const std::exception&) {
    return internal_error("rank 0's session message is malformed (different tessera builds?)");
  }
}

}  // namespace

Status run_parallel_worker(const std::string& model_path_override) {
  Communicator& world = dist::world();
  const int rank = world.rank();
  std::unique_ptr<Model> model;
  std::string loaded;  // path + quantize of `model`
  for (;;) {
    StepHeader h;
    TESSERA_RETURN_IF_ERROR(world.broadcast(&h, sizeof(h), 0));
    if (h.command == static_cast<int64_t>(StepCommand::kExit)) return {};
    // The end of a session whose start failed on some rank.
    if (h.command == static_cast<int64_t>(StepCommand::kEndSession)) continue;
    if (h.command != static_cast<int64_t>(StepCommand::kStartSession)) {
      return internal_error("expected a session start from rank 0, got command " + std::to_string(h.command));
    }
    std::string text(static_cast<size_t>(h.payload_words), '\0');
    TESSERA_RETURN_IF_ERROR(world.broadcast(text.data(), text.size(), 0));
    std::string path, shape;
    auto config = parse_session(text, path, shape);
    if (!model_path_override.empty()) path = model_path_override;
    Status loaded_ok = config.status();
    if (loaded_ok.ok() && (model == nullptr || loaded != path + "|" + config->quantize)) {
      LoadOptions load;
      if (!config->quantize.empty()) load.quantize = load_quant_scheme_from_name(config->quantize);
      load.check_tensors = config->check_tensors;
      auto m = Model::load(path, load);
      loaded_ok = m.status();
      if (m.ok()) {
        model = std::move(m).value();
        loaded = path + "|" + config->quantize;
      }
    }
    if (loaded_ok.ok() && model_shape(*model) != shape) {
      loaded_ok = invalid_argument(path + " is not rank 0's model: " + model_shape(*model) + " against " + shape);
    }
    if (!agree(world, loaded_ok).ok()) continue;  // rank 0 reports it and ends the session or exits
    std::unique_ptr<ModelExecutor> e(new ModelExecutor());
    e->world_ = &world;
    if (!e->build(*model, *config, rank).ok()) continue;
    const ShardPlan plan = e->plan();
    const bool sends_logits = plan.last_stage() && plan.tp_rank == 0 && plan.stage != 0;
    std::vector<int64_t> words;
    ReceivedBatch rb;
    std::vector<float> logits;
    for (;;) {
      TESSERA_RETURN_IF_ERROR(world.broadcast(&h, sizeof(h), 0));
      if (h.command == static_cast<int64_t>(StepCommand::kExit)) return {};
      if (h.command == static_cast<int64_t>(StepCommand::kEndSession)) break;
      if (h.command != static_cast<int64_t>(StepCommand::kStep)) {
        return internal_error("unexpected command " + std::to_string(h.command) + " from rank 0");
      }
      words.resize(static_cast<size_t>(h.payload_words));
      TESSERA_RETURN_IF_ERROR(world.broadcast(words.data(), words.size() * sizeof(int64_t), 0));
      TESSERA_RETURN_IF_ERROR(decode_batch(words, rb));
      const Status st = e->transformer_->forward(rb.batch, *e->kv_, logits);
      // A batch every rank rejects alike (rank 0 reports it) is not fatal.
      if (st.code() == StatusCode::kInvalidArgument) continue;
      TESSERA_RETURN_IF_ERROR(st);
      if (sends_logits && !logits.empty()) {
        TESSERA_RETURN_IF_ERROR(world.send(*e->backend_, logits.data(), logits.size() * sizeof(float), 0));
      }
    }
  }
}

}  // namespace tessera
