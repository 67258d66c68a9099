#include "server/reply.h"

namespace tessera::server {

std::string dump_json(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}
std::string dump_json(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

Reply error_reply(const ApiError& e) {
  Reply r{e.status, dump_json(api_error_body(e)), "application/json", {}};
  if (e.status == 429) r.headers.emplace_back("Retry-After", "1");
  return r;
}

Reply json_reply(const nlohmann::json& j) {
  return Reply{200, dump_json(j), "application/json", {}};
}

}  // namespace tessera::server
