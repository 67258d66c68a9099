#include "webui/web_assets.h"

namespace tessera::webui {

std::string_view content_type_for(std::string_view name) {
  const auto ends = [&](std::string_view ext) {
    return name.size() >= ext.size() && name.substr(name.size() - ext.size()) == ext;
  };
  if (ends(".html")) return "text/html; charset=utf-8";
  if (ends(".js")) return "text/javascript; charset=utf-8";
  if (ends(".css")) return "text/css; charset=utf-8";
  if (ends(".svg")) return "image/svg+xml";
  if (ends(".png")) return "image/png";
  return "application/octet-stream";
}

std::optional<WebAsset> find_web_asset(std::string_view path) {
  constexpr std::string_view kPrefix = "/webui/";
  std::string_view name;
  if (path == "/" || path == "/index.html") {
    name = "index.html";
  } else if (path.size() > kPrefix.size() && path.substr(0, kPrefix.size()) == kPrefix) {
    name = path.substr(kPrefix.size());
    if (name == "index.html") return std::nullopt;
  } else {
    return std::nullopt;
  }
  for (size_t i = 0; i < kEmbeddedAssetCount; ++i) {
    if (kEmbeddedAssets[i].path == name) return WebAsset{kEmbeddedAssets[i].data, content_type_for(name)};
  }
  return std::nullopt;
}

}  // namespace tessera::webui
