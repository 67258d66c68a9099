#include "server/webui_route.h"

#include <string>

#include "webui/web_assets.h"

namespace tessera::server {

std::optional<Reply> handle_webui_route(std::string_view method, std::string_view path, const ServerConfig& config) {
  if (!config.webui || method != "GET") return std::nullopt;
  const auto asset = webui::find_web_asset(path);
  if (!asset) return std::nullopt;
  Reply r{200, std::string(asset->data), std::string(asset->content_type), {}};
  // The page shows model text, which is untrusted: besides rendering it as text only, allow
  // scripts and styles from this server alone, so an injected tag could not run or load anything.
  r.headers.emplace_back("Content-Security-Policy",
                         "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
                         "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
  r.headers.emplace_back("X-Content-Type-Options", "nosniff");
  r.headers.emplace_back("Referrer-Policy", "no-referrer");
  r.headers.emplace_back("Cache-Control", "no-cache");
  return r;
}

}  // namespace tessera::server
